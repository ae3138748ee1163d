package sluicepb_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluicepb"
)

// callers are the three kinds of requests the rules tell apart.
type callers struct{ none, user, superuser string }

// newHTTPApp serves an app with cfg and returns it with a user's and a
// superuser's tokens. Jobs enqueued in it are not worked: it has no
// workers.
func newHTTPApp(t *testing.T, cfg *sluicepb.Config) (*pbApp, callers) {
	t.Helper()
	p := newApp(t, cfg, nil)
	p.serve(t)
	return p, callers{
		user:      p.newAuth(t, "users", "user@example.com"),
		superuser: p.newAuth(t, "_superusers", "root@example.com"),
	}
}

// enqueue enqueues a job directly and returns its ID.
func (p *pbApp) enqueue(t *testing.T, args sluice.JobArgs) string {
	t.Helper()
	res, err := p.jobs.Enqueue(t.Context(), args, nil)
	require.NoError(t, err)
	return res.Job.ID
}

// TestHTTPDefaultRules: with the default rules only superusers may
// enqueue, read or manage jobs; a request without a token gets 401, a
// user's 403, on every path.
func TestHTTPDefaultRules(t *testing.T) {
	t.Parallel()
	p, who := newHTTPApp(t, nil)
	id := p.enqueue(t, ChargeArgs{Order: "o1", Amount: 5})
	enqueue := map[string]any{"topic": "charge", "payload": map[string]any{"order": "o2"}}
	for _, tc := range []struct {
		method, path string
		body         any
		ok           int
	}{
		{http.MethodPost, "/api/jobs/enqueue", enqueue, http.StatusCreated},
		{http.MethodGet, "/api/jobs", nil, http.StatusOK},
		{http.MethodGet, "/api/jobs/" + id, nil, http.StatusOK},
		{http.MethodGet, "/api/jobs/stats", nil, http.StatusOK},
		{http.MethodGet, "/api/jobs/queues", nil, http.StatusOK},
		{http.MethodGet, "/api/jobs/schedules", nil, http.StatusOK},
		{http.MethodGet, "/api/jobs/dashboard/api/jobs/" + id, nil, http.StatusOK},
		{http.MethodPost, "/api/jobs/" + id + "/cancel", nil, http.StatusOK},
		{http.MethodPost, "/api/jobs/" + id + "/requeue", nil, http.StatusOK},
		{http.MethodDelete, "/api/jobs/" + id, nil, http.StatusOK},
		{http.MethodGet, "/api/jobs/queues/default/keys", nil, http.StatusOK},
		{http.MethodPut, "/api/jobs/limits/queue/default/keys", map[string]any{"max_running": 1}, http.StatusOK},
		{http.MethodPut, "/api/jobs/limits/topic/charge/keys", map[string]any{"sequence": "hold"}, http.StatusOK},
		{http.MethodPut, "/api/jobs/limits/topic/charge", map[string]any{"max_running": 3}, http.StatusOK},
		{http.MethodGet, "/api/jobs/limits", nil, http.StatusOK},
	} {
		superusersOnly(t, p, who, tc.method, tc.path, tc.body, tc.ok)
	}
	// The superuser's requests did what they said: one job enqueued, the
	// first cancelled, requeued, then deleted; limits stored.
	c, err := p.jobs.Client()
	require.NoError(t, err)
	limits, err := c.StoredLimits(t.Context())
	require.NoError(t, err)
	require.Len(t, limits, 2)
	require.Equal(t, 1, limits[0].KeyMaxRunning)
	require.Equal(t, 3, limits[1].MaxRunning)
	require.Equal(t, sluice.SequenceHold, limits[1].Sequence)
	_, err = c.Get(t.Context(), id)
	require.ErrorIs(t, err, sluice.ErrNotFound)
	list, err := c.List(t.Context(), &sluice.ListFilter{})
	require.NoError(t, err)
	require.Len(t, list.Jobs, 1)
	require.JSONEq(t, `{"order":"o2"}`, string(list.Jobs[0].Payload))
}

// superusersOnly requires the request to answer 401 without a token, 403
// with a user's, and ok with a superuser's.
func superusersOnly(t *testing.T, p *pbApp, who callers, method, path string, body any, ok int) {
	t.Helper()
	name := method + " " + path
	status, answer := p.call(t, method, path, who.none, body)
	require.Equal(t, http.StatusUnauthorized, status, "%s without a token: %v", name, answer)
	status, answer = p.call(t, method, path, who.user, body)
	require.Equal(t, http.StatusForbidden, status, "%s as a user: %v", name, answer)
	status, answer = p.call(t, method, path, who.superuser, body)
	require.Equal(t, ok, status, "%s as a superuser: %v", name, answer)
}

// TestHTTPPublicRules: "true" lets requests without a token in.
func TestHTTPPublicRules(t *testing.T) {
	t.Parallel()
	p, who := newHTTPApp(t, &sluicepb.Config{EnqueueRule: sluicepb.RulePublic, ManageRule: sluicepb.RulePublic})
	status, body := p.call(t, http.MethodPost, "/api/jobs/enqueue", who.none,
		map[string]any{"topic": "mail", "payload": map[string]any{"to": "a@b.c"}})
	require.Equal(t, http.StatusCreated, status, "%v", body)
	id := body["job"].(map[string]any)["id"].(string)
	status, body = p.call(t, http.MethodGet, "/api/jobs/"+id, who.none, nil)
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Equal(t, "mail", body["topic"])
	status, _ = p.call(t, http.MethodDelete, "/api/jobs/"+id, who.none, nil)
	require.Equal(t, http.StatusOK, status)
}

// TestHTTPRuleFields: rules that use @request.auth.*, @request.body.*,
// topic and payload.*, and the allowed topics.
func TestHTTPRuleFields(t *testing.T) {
	t.Parallel()
	p, who := newHTTPApp(t, &sluicepb.Config{
		EnqueueRule:   `@request.auth.collectionName = "users" && @request.body.queue = "" && (topic = "mail" || payload.amount <= 100)`,
		ManageRule:    `@request.auth.id != "" && topic = "mail"`,
		AllowedTopics: []string{"charge", "mail"},
	})
	charge := func(amount int) map[string]any {
		return map[string]any{"topic": "charge", "payload": map[string]any{"order": "o", "amount": amount}}
	}
	for _, tc := range []struct {
		name, token string
		body        map[string]any
		want        int
	}{
		{"user, small charge", who.user, charge(50), http.StatusCreated},
		{"user, large charge", who.user, charge(500), http.StatusForbidden},
		{"user, large charge with a queue in the body", who.user, map[string]any{"topic": "charge", "queue": "default",
			"payload": map[string]any{"amount": 5}}, http.StatusForbidden},
		{"user, mail", who.user, map[string]any{"topic": "mail", "payload": map[string]any{"to": "a@b.c"}}, http.StatusCreated},
		{"no token, small charge", who.none, charge(5), http.StatusUnauthorized},
		{"superuser, large charge", who.superuser, charge(500), http.StatusCreated},
		{"superuser, topic not allowed", who.superuser, map[string]any{"topic": "other", "payload": map[string]any{}}, http.StatusForbidden},
		{"user, topic not allowed", who.user, map[string]any{"topic": "other", "payload": map[string]any{}}, http.StatusForbidden},
	} {
		status, body := p.call(t, http.MethodPost, "/api/jobs/enqueue", tc.token, tc.body)
		require.Equal(t, tc.want, status, "%s: %v", tc.name, body)
	}

	mail := p.enqueue(t, MailArgs{To: "a@b.c"})
	chargeID := p.enqueue(t, ChargeArgs{Order: "o9", Amount: 1})
	for _, tc := range []struct {
		name, method, path, token string
		want                      int
	}{
		{"user reads a mail job", http.MethodGet, "/api/jobs/" + mail, who.user, http.StatusOK},
		{"user reads a charge job", http.MethodGet, "/api/jobs/" + chargeID, who.user, http.StatusForbidden},
		{"no token reads a mail job", http.MethodGet, "/api/jobs/" + mail, who.none, http.StatusUnauthorized},
		{"user lists mail jobs", http.MethodGet, "/api/jobs?topics=mail", who.user, http.StatusOK},
		{"user lists every job", http.MethodGet, "/api/jobs", who.user, http.StatusForbidden},
		{"superuser lists every job", http.MethodGet, "/api/jobs", who.superuser, http.StatusOK},
		{"user cancels a charge job", http.MethodPost, "/api/jobs/" + chargeID + "/cancel", who.user, http.StatusForbidden},
		{"user cancels a mail job", http.MethodPost, "/api/jobs/" + mail + "/cancel", who.user, http.StatusOK},
		{"user requeues a mail job", http.MethodPost, "/api/jobs/" + mail + "/requeue", who.user, http.StatusOK},
		{"user deletes a charge job", http.MethodDelete, "/api/jobs/" + chargeID, who.user, http.StatusForbidden},
		{"user deletes a mail job", http.MethodDelete, "/api/jobs/" + mail, who.user, http.StatusOK},
		{"superuser deletes a charge job", http.MethodDelete, "/api/jobs/" + chargeID, who.superuser, http.StatusOK},
		{"user reads the limits, of every topic", http.MethodGet, "/api/jobs/limits", who.user, http.StatusForbidden},
		{"user reads a queue's keys, of every topic", http.MethodGet, "/api/jobs/queues/default/keys", who.user, http.StatusForbidden},
		{"superuser reads a queue's keys", http.MethodGet, "/api/jobs/queues/default/keys", who.superuser, http.StatusOK},
	} {
		status, body := p.call(t, tc.method, tc.path, tc.token, nil)
		require.Equal(t, tc.want, status, "%s: %v", tc.name, body)
	}

	// Setting limits is managing: of a topic, judged with that topic; of a
	// queue, which holds jobs of any topic, refused to a rule that names
	// topics.
	limit := map[string]any{"max_running": 2}
	for _, tc := range []struct {
		name, path, token string
		want              int
	}{
		{"user limits the keys of mail", "/api/jobs/limits/topic/mail/keys", who.user, http.StatusOK},
		{"user limits mail", "/api/jobs/limits/topic/mail", who.user, http.StatusOK},
		{"user limits the keys of charge", "/api/jobs/limits/topic/charge/keys", who.user, http.StatusForbidden},
		{"user limits charge", "/api/jobs/limits/topic/charge", who.user, http.StatusForbidden},
		{"user limits the keys of a queue", "/api/jobs/limits/queue/default/keys", who.user, http.StatusForbidden},
		{"no token limits mail", "/api/jobs/limits/topic/mail", who.none, http.StatusUnauthorized},
		{"superuser limits the keys of a queue", "/api/jobs/limits/queue/default/keys", who.superuser, http.StatusOK},
	} {
		status, body := p.call(t, http.MethodPut, tc.path, tc.token, limit)
		require.Equal(t, tc.want, status, "%s: %v", tc.name, body)
	}
	c, err := p.jobs.Client()
	require.NoError(t, err)
	stored, err := c.StoredLimits(t.Context())
	require.NoError(t, err)
	require.Len(t, stored, 2, "the queue's and mail's, not charge's")
	require.Equal(t, sluice.TopicScope("mail"), stored[1].Scope)
}

// TestHTTPDashboardCookie: the dashboard and its event stream are
// authenticated by the panel's cookie, which only a superuser's (or a
// rule-allowed) token opens; the standalone page is served.
func TestHTTPDashboardCookie(t *testing.T) {
	t.Parallel()
	p, who := newHTTPApp(t, nil)
	get := func(path, cookie string) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, p.url+path, nil)
		require.NoError(t, err)
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: sluicepb.TokenCookie, Value: cookie})
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
			return res.StatusCode, ""
		}
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, string(b)
	}
	status, page := get(sluicepb.DashboardPath, "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, "<html")
	status, _ = get(sluicepb.DashboardPath+"api/jobs", "")
	require.Equal(t, http.StatusUnauthorized, status)
	status, _ = get(sluicepb.DashboardPath+"api/jobs", who.user)
	require.Equal(t, http.StatusForbidden, status)
	status, _ = get(sluicepb.DashboardPath+"api/jobs", "not a token")
	require.Equal(t, http.StatusUnauthorized, status)
	status, body := get(sluicepb.DashboardPath+"api/jobs", who.superuser)
	require.Equal(t, http.StatusOK, status, body)
	status, _ = get(sluicepb.DashboardPath+"api/events", who.superuser)
	require.Equal(t, http.StatusOK, status)
	// The short paths under /api/jobs for sluiceweb's other endpoints.
	for _, path := range []string{"/api/jobs/events", "/api/jobs/queues", "/api/jobs/clients", "/api/jobs/schedules"} {
		status, _ = get(path, "")
		require.Equal(t, http.StatusUnauthorized, status, path)
		status, body = get(path, who.superuser)
		require.Equal(t, http.StatusOK, status, "%s: %s", path, body)
	}
	status, body = get(sluicepb.DashboardPath+"api/openapi.json", "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, `"openapi"`)
	status, page = get(sluicepb.PanelPath, "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, "dashboard/")
	status, js := get("/_/extensions.js", "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, js, `app.routes.superuserOnly("#/jobs"`)
}

// TestHTTPRuleExcludingATopic: a rule that keeps a topic out holds for
// requests that name several topics, or none: each named topic must pass,
// and a request on every topic is refused, since the rule cannot judge it.
func TestHTTPRuleExcludingATopic(t *testing.T) {
	t.Parallel()
	p, who := newHTTPApp(t, &sluicepb.Config{ManageRule: `@request.auth.id != "" && topic != "charge"`})
	mail := p.enqueue(t, MailArgs{To: "a@b.c"})
	chargeID := p.enqueue(t, ChargeArgs{Order: "o9", Amount: 1})
	for _, tc := range []struct {
		name, method, path, token string
		body                      any
		want                      int
	}{
		{"user lists mail jobs", http.MethodGet, "/api/jobs?topics=mail", who.user, nil, http.StatusOK},
		{"user lists charge jobs", http.MethodGet, "/api/jobs?topics=charge", who.user, nil, http.StatusForbidden},
		{"user lists charge and mail jobs", http.MethodGet, "/api/jobs?topics=charge,mail", who.user, nil, http.StatusForbidden},
		{"user lists every job", http.MethodGet, "/api/jobs", who.user, nil, http.StatusForbidden},
		{"user reads the mail job", http.MethodGet, "/api/jobs/" + mail, who.user, nil, http.StatusOK},
		{"user reads the charge job", http.MethodGet, "/api/jobs/" + chargeID, who.user, nil, http.StatusForbidden},
		{"user cancels charge and mail jobs", http.MethodPost, "/api/jobs/cancel", who.user,
			map[string]any{"topics": []string{"charge", "mail"}}, http.StatusForbidden},
		// A workflow's or batch's ID names no topic: the request is on
		// every topic, which the rule refuses.
		{"user lists a group's jobs", http.MethodGet, "/api/jobs?group_ids=01a21100-0000-7000-8000-000000000000", who.user, nil,
			http.StatusForbidden},
		{"user cancels a group's jobs", http.MethodPost, "/api/jobs/cancel", who.user,
			map[string]any{"group_ids": []string{"01a21100-0000-7000-8000-000000000000"}}, http.StatusForbidden},
		{"user cancels a group's mail jobs", http.MethodPost, "/api/jobs/cancel", who.user,
			map[string]any{"topics": []string{"mail"}, "group_ids": []string{"01a21100-0000-7000-8000-000000000000"}}, http.StatusOK},
		{"superuser lists every job", http.MethodGet, "/api/jobs", who.superuser, nil, http.StatusOK},
	} {
		status, body := p.call(t, tc.method, tc.path, tc.token, tc.body)
		require.Equal(t, tc.want, status, "%s: %v", tc.name, body)
	}
	c, err := p.jobs.Client()
	require.NoError(t, err)
	row, err := c.Get(t.Context(), chargeID)
	require.NoError(t, err)
	require.Equal(t, sluice.StatusPending, row.Status, "the charge job was not cancelled")
}
