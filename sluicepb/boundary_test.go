package sluicepb_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluicepb"
)

// NoopArgs name the user a job acts for.
type NoopArgs struct {
	User string `json:"user"`
}

// Topic implements sluice.JobArgs.
func (NoopArgs) Topic() string { return "noop" }

// OrderArgs name the user an order's job acts for, one level down.
type OrderArgs struct {
	Order struct {
		User string `json:"user"`
	} `json:"order"`
}

// Topic implements sluice.JobArgs.
func (OrderArgs) Topic() string { return "order" }

// RoleArgs name the role a job acts with.
type RoleArgs struct {
	Role string `json:"role"`
}

// Topic implements sluice.JobArgs.
func (RoleArgs) Topic() string { return "role" }

// boundaryRule lets a signed-in user enqueue jobs that act for itself
// only, and jobs with any role but admin.
const boundaryRule = `@request.auth.id != "" && (` +
	`(topic = "noop" && payload.user = @request.auth.id) || ` +
	`(topic = "order" && payload.order.user = @request.auth.id) || ` +
	`(topic = "role" && payload.role != "admin"))`

// TestRulesJudgeWhatIsStored: a request a rule would judge on one reading
// of its body, while the job stored and worked would read another, is
// refused; nothing is stored, and the workers only ever act for the user
// who asked.
func TestRulesJudgeWhatIsStored(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var actedFor, roles []string
	p := newApp(t, &sluicepb.Config{EnqueueRule: boundaryRule, PollInterval: 10 * time.Millisecond}, func(j *sluicepb.Jobs) {
		require.NoError(t, sluicepb.AddWorker(j, sluice.WorkFunc(func(_ context.Context, job *sluice.Job[NoopArgs]) error {
			mu.Lock()
			defer mu.Unlock()
			actedFor = append(actedFor, job.Args.User)
			return nil
		})))
		require.NoError(t, sluicepb.AddWorker(j, sluice.WorkFunc(func(_ context.Context, job *sluice.Job[OrderArgs]) error {
			mu.Lock()
			defer mu.Unlock()
			actedFor = append(actedFor, job.Args.Order.User)
			return nil
		})))
		require.NoError(t, sluicepb.AddWorker(j, sluice.WorkFunc(func(_ context.Context, job *sluice.Job[RoleArgs]) error {
			mu.Lock()
			defer mu.Unlock()
			roles = append(roles, job.Args.Role)
			return nil
		})))
	})
	p.serve(t)
	me, token := p.newRecord(t, "users", "me@example.com")
	other, _ := p.newRecord(t, "users", "other@example.com")
	superuser := p.newAuth(t, "_superusers", "root@example.com")
	body := func(s string) []byte {
		return []byte(strings.NewReplacer("ME", me, "OTHER", other).Replace(s))
	}
	for _, tc := range []struct {
		name, body string
	}{
		{"a second payload member by case", `{"topic":"noop","payload":{"user":"ME"},"Payload":{"user":"OTHER"}}`},
		{"a payload member twice by case", `{"topic":"noop","payload":{"user":"ME","User":"OTHER"}}`},
		{"a payload member twice by the long s", `{"topic":"noop","payload":{"user":"ME","uſer":"OTHER"}}`},
		{"a payload member twice", `{"topic":"noop","payload":{"user":"ME","user":"OTHER"}}`},
		{"a payload member by case only", `{"topic":"noop","payload":{"User":"OTHER"}}`},
		{"a nested member twice by case", `{"topic":"order","payload":{"order":{"user":"ME","USER":"OTHER"}}}`},
		{"a nested member by case only", `{"topic":"order","payload":{"order":{"uſer":"OTHER"}}}`},
		{"a nested object twice by case", `{"topic":"order","payload":{"order":{"user":"ME"},"Order":{"user":"OTHER"}}}`},
		{"a negative rule dodged by case", `{"topic":"role","payload":{"Role":"admin"}}`},
		{"a topic twice by an escape", `{"topic":"noop","payload":{"user":"ME"},"\u0074opic":"role"}`},
		{"more after the object", `{"topic":"noop","payload":{"user":"ME"}}` + strings.Repeat(" ", 200000) + `{"topic":"noop","payload":{"user":"OTHER"}}`},
		{"invalid UTF-8", "{\"topic\":\"noop\",\"payload\":{\"user\":\"ME\"},\"unique_key\":\"q\xff\"}"},
	} {
		status, res := p.callRaw(t, http.MethodPost, "/api/jobs/enqueue", token, "application/json", body(tc.body))
		require.True(t, status >= 400 && status < 500, "%s: %d %v", tc.name, status, res)
	}

	// What PocketBase could not parse reaches sluiceweb whole: a cut body
	// is said to be cut, not empty.
	status, res := p.callRaw(t, http.MethodPost, "/api/jobs/enqueue", token, "application/json", body(`{"topic":"noop","payload":{"user":"ME"`))
	require.Equal(t, http.StatusBadRequest, status, "%v", res)
	require.NotContains(t, res["detail"], "empty")
	// A body sent as anything but JSON is not read as JSON.
	status, res = p.callRaw(t, http.MethodPost, "/api/jobs/enqueue", token, "text/plain", body(`{"topic":"noop","payload":{"user":"ME"}}`))
	require.Equal(t, http.StatusUnsupportedMediaType, status, "%v", res)
	require.Equal(t, "unsupported_media_type", res["code"])
	// Superusers pass every rule, not the checks of what is stored.
	status, res = p.callRaw(t, http.MethodPost, "/api/jobs/enqueue", superuser, "application/json",
		body(`{"topic":"noop","payload":{"user":"ME"}}`+strings.Repeat(" ", 200000)+`{"topic":"noop","payload":{"user":"OTHER"}}`))
	require.Equal(t, http.StatusBadRequest, status, "%v", res)

	c, err := p.jobs.Client()
	require.NoError(t, err)
	list, err := c.List(t.Context(), &sluice.ListFilter{})
	require.NoError(t, err)
	require.Empty(t, list.Jobs, "nothing was stored")

	// The same user, asking for itself, is served.
	for _, b := range []string{
		`{"topic":"noop","payload":{"user":"ME"}}`,
		`{"topic":"order","payload":{"order":{"user":"ME"}}}`,
		`{"topic":"role","payload":{"role":"editor"}}`,
	} {
		status, res := p.callRaw(t, http.MethodPost, "/api/jobs/enqueue", token, "application/json; charset=utf-8", body(b))
		require.Equal(t, http.StatusCreated, status, "%s: %v", b, res)
	}
	status, res = p.callRaw(t, http.MethodPost, "/api/jobs/enqueue", token, "application/json", body(`{"topic":"noop","payload":{"user":"OTHER"}}`))
	require.Equal(t, http.StatusForbidden, status, "%v", res)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(actedFor) == 2 && len(roles) == 1
	}, 20*time.Second, 10*time.Millisecond)
	require.Equal(t, []string{me, me}, actedFor)
	require.Equal(t, []string{"editor"}, roles)
}
