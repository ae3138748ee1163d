package sluiceweb_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluiceweb"
)

// tasks returns n tasks of topic mail named t0, t1, ..., each after the
// one before it, as the JSON of a workflow's tasks.
func tasks(n int, payload string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"t%d","topic":"mail","payload":%s`, i, payload)
		if i > 0 {
			fmt.Fprintf(&b, `,"after":["t%d"]`, i-1)
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
	return b.String()
}

// refused is a body a request refuses, with the status, code and field
// of the problem it answers.
type refused struct {
	name, body  string
	status      int
	code, field string
}

// TestWorkflowRefusesBadInputAndWritesNothing attacks POST api/workflows:
// each body is refused with a problem naming the member at fault, and
// nothing is stored.
func TestWorkflowRefusesBadInputAndWritesNothing(t *testing.T) {
	t.Parallel()
	task := func(rest string) string { return `{"name": "w", "tasks": [` + rest + `]}` }
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		for _, tc := range []refused{
			{"a member twice", task(`{"name": "a", "topic": "mail", "topic": "sms"}`), 400, sluiceweb.CodeInvalidRequest, "tasks[0].topic"},
			{"a member twice by case", task(`{"name": "a", "topic": "mail", "Topic": "sms"}`), 400, sluiceweb.CodeInvalidRequest, "tasks[0].Topic"},
			{"a member by case only", task(`{"Name": "a", "topic": "mail"}`), 400, sluiceweb.CodeInvalidRequest, "tasks[0].Name"},
			{"a member of the body twice", `{"name": "w", "tasks": [{"name": "a", "topic": "mail"}], "Tasks": []}`, 400, sluiceweb.CodeInvalidRequest, "Tasks"},
			{"a payload member twice", task(`{"name": "a", "topic": "mail", "payload": {"to": "a", "TO": "b"}}`), 400, sluiceweb.CodeInvalidPayload, "tasks[0].payload.TO"},
			{"a payload field by case only", task(`{"name": "a", "topic": "mail", "payload": {"To": "a"}}`), 400, sluiceweb.CodeInvalidPayload, "tasks[0].payload"},
			{"an unknown member", task(`{"name": "a", "topic": "mail", "args": {}}`), 400, sluiceweb.CodeInvalidRequest, "tasks[0].args"},
			{"a task not an object", task(`"a"`), 400, sluiceweb.CodeInvalidRequest, "tasks[0]"},
			{"invalid UTF-8", task("{\"name\": \"a\xff\", \"topic\": \"mail\"}"), 400, sluiceweb.CodeInvalidRequest, "tasks[0].name"},
			{"a lone surrogate", task(`{"name": "a\ud800", "topic": "mail"}`), 400, sluiceweb.CodeInvalidRequest, "tasks[0].name"},
			{"more after the body", task(`{"name": "a", "topic": "mail"}`) + ` {}`, 400, sluiceweb.CodeInvalidRequest, ""},
			{"no task", `{"name": "w", "tasks": []}`, 400, sluiceweb.CodeInvalidWorkflow, "tasks"},
			{"no tasks member", `{"name": "w"}`, 400, sluiceweb.CodeInvalidWorkflow, "tasks"},
			{"too many tasks", `{"tasks": ` + tasks(sluice.MaxGroupJobs+1, "{}") + `}`, 400, sluiceweb.CodeInvalidWorkflow, "tasks"},
			{"a task without a name", task(`{"topic": "mail"}`), 400, sluiceweb.CodeInvalidWorkflow, "tasks[0].name"},
			{"a task name twice", task(`{"name": "a", "topic": "mail"}, {"name": "b", "topic": "mail"}, {"name": "a", "topic": "mail"}`),
				400, sluiceweb.CodeInvalidWorkflow, "tasks[2].name"},
			{"after an unknown task", task(`{"name": "a", "topic": "mail"}, {"name": "b", "topic": "mail", "after": ["a", "c"]}`),
				400, sluiceweb.CodeInvalidWorkflow, "tasks[1].after[1]"},
			{"a task after itself", task(`{"name": "a", "topic": "mail", "after": ["a"]}`), 400, sluiceweb.CodeInvalidWorkflow, "tasks[0]"},
			{"a cycle", task(`{"name": "a", "topic": "mail", "after": ["b"]}, {"name": "b", "topic": "mail", "after": ["a"]}`),
				400, sluiceweb.CodeInvalidWorkflow, "tasks[0]"},
			{"after too many", task(`{"name": "a", "topic": "mail", "after": [` + strings.Repeat(`"a",`, sluice.MaxDependencies) + `"a"]}`),
				400, sluiceweb.CodeInvalidWorkflow, "tasks[0].after"},
			{"a NUL in a task name", task(`{"name": "a\u0000", "topic": "mail"}`), 400, sluiceweb.CodeInvalidWorkflow, "tasks[0].name"},
			{"a NUL in the name", `{"name": "w\u0000", "tasks": [{"name": "a", "topic": "mail"}]}`, 400, sluiceweb.CodeInvalidWorkflow, "name"},
			{"a task with a unique key", task(`{"name": "a", "topic": "mail", "unique_key": "k"}`), 400, sluiceweb.CodeInvalidRequest, "tasks[0].unique_key"},
			{"a task with dependencies", task(`{"name": "a", "topic": "mail", "depends_on": ["01a21100-0000-7000-8000-000000000000"]}`),
				400, sluiceweb.CodeInvalidRequest, "tasks[0].depends_on"},
			{"a bad policy", task(`{"name": "a", "topic": "mail"}, {"name": "b", "topic": "mail", "after": ["a"], "on_dependency_failure": "ignore"}`),
				400, sluiceweb.CodeInvalidRequest, "tasks[1].on_dependency_failure"},
			{"a bad time", task(`{"name": "a", "topic": "mail", "run_at": "soon"}`), 400, sluiceweb.CodeInvalidRequest, "tasks[0].run_at"},
			{"no topic", task(`{"name": "a"}`), 400, sluiceweb.CodeInvalidRequest, "tasks[0].topic"},
			{"an unknown topic", task(`{"name": "a", "topic": "mail"}, {"name": "b", "topic": "sms"}`), 400, sluiceweb.CodeUnknownTopic, "tasks[1].topic"},
			{"an unknown queue", task(`{"name": "a", "topic": "mail", "queue": "nowhere"}`), 400, sluiceweb.CodeUnknownQueue, "tasks[0].queue"},
			{"a payload of the wrong type", task(`{"name": "a", "topic": "mail", "payload": {"to": 5}}`), 400, sluiceweb.CodeInvalidPayload, "tasks[0].payload"},
			{"a payload over the limit", task(`{"name": "a", "topic": "mail", "payload": {"to": "` + strings.Repeat("x", sluice.DefaultMaxPayloadBytes) + `"}}`),
				413, sluiceweb.CodePayloadTooLarge, "tasks[0].payload"},
			{"a callback of an unknown topic", `{"tasks": [{"name": "a", "topic": "mail"}], "on_failure": [{"topic": "mail"}, {"topic": "sms"}]}`,
				400, sluiceweb.CodeUnknownTopic, "on_failure[1].topic"},
			{"a callback with a unique key", `{"tasks": [{"name": "a", "topic": "mail"}], "on_success": [{"topic": "mail", "unique_key": "k"}]}`,
				400, sluiceweb.CodeInvalidRequest, "on_success[0].unique_key"},
			{"a callback member by case only", `{"tasks": [{"name": "a", "topic": "mail"}], "on_complete": [{"Topic": "mail"}]}`,
				400, sluiceweb.CodeInvalidRequest, "on_complete[0].Topic"},
			{"a task named as a callback is placed, and a bad callback", `{"tasks": [{"name": "OnSuccess[0]", "topic": "mail"}], "on_success": [{"topic": "mail", "queue": "nowhere"}]}`,
				400, sluiceweb.CodeUnknownQueue, "on_success[0].queue"},
		} {
			p := e.do("POST", "api/workflows", tc.body).problem(t, tc.status, tc.code)
			require.Equal(t, tc.field, p.Field, "%s: %s", tc.name, p.Detail)
		}
		require.Zero(t, e.count(), "no job was stored")
		var list groupList
		e.do("GET", "api/workflows", "").json(t, http.StatusOK, &list)
		require.Empty(t, list.Items, "no workflow was stored")
	})
}

// TestWorkflowBodies: a workflow's body may be larger than a job's, up to
// 16 MiB.
func TestWorkflowBodies(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		const n = 1500
		payload := `{"to":"` + strings.Repeat("x", 800) + `@example.com"}`
		body := `{"name": "large", "tasks": ` + tasks(n, payload) + `}`
		require.Greater(t, len(body), sluice.DefaultMaxPayloadBytes+64<<10, "over a job's body limit")
		var made struct {
			Jobs []jobJSON `json:"jobs"`
		}
		e.do("POST", "api/workflows", body).json(t, http.StatusCreated, &made)
		require.Len(t, made.Jobs, n)
		require.Equal(t, fmt.Sprint("t", n-1), made.Jobs[n-1].Task)

		huge := `{"tasks": [{"name": "a", "topic": "mail", "payload": {"to": "` + strings.Repeat("x", 17<<20) + `"}}]}`
		e.do("POST", "api/workflows", huge).problem(t, http.StatusRequestEntityTooLarge, sluiceweb.CodePayloadTooLarge)
		require.Equal(t, n, e.count())
	})
}

func TestBatchRefusesBadInputAndWritesNothing(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		for _, tc := range []refused{
			{"no job", `{"name": "b", "jobs": []}`, 400, sluiceweb.CodeInvalidBatch, "jobs"},
			{"too many jobs", `{"jobs": [` + strings.Repeat(`{"topic":"mail"},`, sluice.MaxGroupJobs) + `{"topic":"mail"}]}`, 400, sluiceweb.CodeInvalidBatch, "jobs"},
			{"a job with a unique key", `{"jobs": [{"topic": "mail"}, {"topic": "mail", "unique_key": "k"}]}`, 400, sluiceweb.CodeInvalidRequest, "jobs[1].unique_key"},
			{"a job of an unknown topic", `{"jobs": [{"topic": "sms"}]}`, 400, sluiceweb.CodeUnknownTopic, "jobs[0].topic"},
			{"a callback with dependencies", `{"jobs": [{"topic": "mail"}], "on_success": [{"topic": "mail", "depends_on": ["01a21100-0000-7000-8000-000000000000"]}]}`,
				400, sluiceweb.CodeInvalidRequest, "on_success[0].depends_on"},
			{"keep_open not a boolean", `{"jobs": [{"topic": "mail"}], "keep_open": "yes"}`, 400, sluiceweb.CodeInvalidRequest, "keep_open"},
			{"a job member twice by case", `{"jobs": [{"topic": "mail", "Queue": "bulk", "queue": "default"}]}`, 400, sluiceweb.CodeInvalidRequest, "jobs[0].queue"},
			{"an unknown member", `{"jobs": [{"topic": "mail"}], "tasks": []}`, 400, sluiceweb.CodeInvalidRequest, "tasks"},
		} {
			p := e.do("POST", "api/batches", tc.body).problem(t, tc.status, tc.code)
			require.Equal(t, tc.field, p.Field, "%s: %s", tc.name, p.Detail)
		}
		var open struct {
			ID string `json:"id"`
		}
		e.do("POST", "api/batches", `{"keep_open": true}`).json(t, http.StatusCreated, &open)
		for _, tc := range []struct{ body, code, field string }{
			{`{"jobs": []}`, sluiceweb.CodeInvalidBatch, "jobs"},
			{`{}`, sluiceweb.CodeInvalidBatch, "jobs"},
			{`{"jobs": [{"topic": "mail"}, {"topic": "mail", "priority": 1e6}]}`, sluiceweb.CodeInvalidRequest, "jobs[1].priority"},
			{`{"jobs": [{"topic": "mail", "payload": {"to": "a", "to": "b"}}]}`, sluiceweb.CodeInvalidPayload, "jobs[0].payload.to"},
		} {
			p := e.do("POST", "api/batches/"+open.ID+"/jobs", tc.body).problem(t, http.StatusBadRequest, tc.code)
			require.Equal(t, tc.field, p.Field, tc.body)
		}
		require.Zero(t, e.count(), "no job was stored")
		var list groupList
		e.do("GET", "api/batches", "").json(t, http.StatusOK, &list)
		require.Len(t, list.Items, 1, "the open batch only")
	})
}

// TestGroupsAuthorized: Authorize sees every topic a workflow or batch
// involves, its tasks' and callbacks', and the payloads as stored; a
// topic it refuses hidden in a callback or a task refuses the whole.
func TestGroupsAuthorized(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		p := &policy{}
		e := newEnv(t, db, &sluiceweb.Options{Authorize: p.authorize})
		mailer := []string{"X-User", "mailer"}
		reader := []string{"X-User", "reader"}
		for _, body := range []string{
			`{"tasks": [{"name": "a", "topic": "mail"}], "on_failure": [{"topic": "sms"}]}`,
			`{"tasks": [{"name": "a", "topic": "mail"}, {"name": "b", "topic": "sms", "after": ["a"]}]}`,
		} {
			e.do("POST", "api/workflows", body, mailer...).problem(t, http.StatusForbidden, sluiceweb.CodeForbidden)
			require.Equal(t, []string{"mail", "sms"}, p.last().Topics)
		}
		e.do("POST", "api/batches", `{"jobs": [{"topic": "mail"}], "on_complete": [{"topic": "sms"}]}`, mailer...).
			problem(t, http.StatusForbidden, sluiceweb.CodeForbidden)
		e.do("POST", "api/workflows", `{"tasks": [{"name": "a", "topic": "mail"}]}`, reader...).
			problem(t, http.StatusForbidden, sluiceweb.CodeForbidden)
		var none struct {
			Total int `json:"total"`
		}
		e.do("GET", "api/jobs", "", reader...).json(t, http.StatusOK, &none)
		require.Zero(t, none.Total, "nothing was stored")

		var made struct {
			ID string `json:"id"`
		}
		e.do("POST", "api/workflows", `{"name": "w", "tasks": [{"name": "a", "topic": "mail", "payload": { "to" : "a@example.com" }}],
			"on_success": [{"topic": "mail"}]}`, mailer...).json(t, http.StatusCreated, &made)
		a := p.last()
		require.Equal(t, sluiceweb.ActionEnqueue, a.Kind)
		require.Equal(t, "enqueue_workflow", a.Name)
		require.Equal(t, []string{"mail"}, a.Topics)
		require.Equal(t, []sluiceweb.ActionJob{
			{Field: "tasks[0]", Topic: "mail", Payload: json.RawMessage(`{"to":"a@example.com"}`)},
			{Field: "on_success[0]", Topic: "mail", Payload: json.RawMessage(`{}`)},
		}, a.Jobs, "the payloads as stored")
		require.NotEmpty(t, a.Body)

		e.do("GET", "api/workflows/"+made.ID, "", reader...).json(t, http.StatusOK, &groupJSON{})
		a = p.last()
		require.Equal(t, sluiceweb.Action{Kind: sluiceweb.ActionRead, Name: "get_workflow", Topics: []string{"mail"}, Group: made.ID}, a)
		e.do("GET", "api/workflows", "", reader...).json(t, http.StatusOK, &groupList{})
		require.Equal(t, sluiceweb.Action{Kind: sluiceweb.ActionRead, Name: "list_workflows", AllTopics: true}, p.last())
		e.do("POST", "api/workflows/"+made.ID+"/cancel", "", reader...).problem(t, http.StatusForbidden, sluiceweb.CodeForbidden)
		require.Equal(t, "cancel_workflow", p.last().Name)
		e.do("POST", "api/workflows/"+made.ID+"/cancel", "", mailer...).json(t, http.StatusOK, &changed{})
		require.Equal(t, sluiceweb.Action{Kind: sluiceweb.ActionManage, Name: "cancel_workflow", Topics: []string{"mail"}, Group: made.ID}, p.last())
		e.do("GET", "api/workflows/01a21100-0000-7000-8000-000000000000", "", reader...).problem(t, http.StatusNotFound, sluiceweb.CodeNotFound)
		require.Empty(t, p.last().Topics, "a workflow that does not exist has no topics")

		// A batch of another topic, enqueued by the Go API: a mailer may
		// read it, and neither cancel, retry, close nor add to it.
		other := e.db.client(t, &sluice.Config{})
		res, err := other.(interface {
			EnqueueBatch(ctx context.Context, b *sluice.Batch) (*sluice.BatchResult, error)
		}).EnqueueBatch(t.Context(), sluice.NewBatch("sms").KeepOpen().Add(sluice.RawArgs{TopicName: "sms"}, nil).
			OnSuccess(sluice.RawArgs{TopicName: "push"}, nil))
		require.NoError(t, err)
		e.do("GET", "api/batches/"+res.ID, "", mailer...).json(t, http.StatusOK, &groupJSON{})
		require.Equal(t, []string{"sms", "push"}, p.last().Topics, "its jobs' and its callbacks' topics")
		for _, op := range []string{"cancel", "retry", "close"} {
			e.do("POST", "api/batches/"+res.ID+"/"+op, "", mailer...).problem(t, http.StatusForbidden, sluiceweb.CodeForbidden)
			require.Equal(t, op+"_batch", p.last().Name)
		}
		var added changed
		e.do("POST", "api/batches/"+res.ID+"/jobs", `{"jobs": [{"topic": "mail"}]}`, mailer...).json(t, http.StatusCreated, &added)
		a = p.last()
		require.Equal(t, "add_to_batch", a.Name)
		require.Equal(t, res.ID, a.Group)
		require.Equal(t, []string{"mail"}, a.Topics, "the jobs added")
		require.Equal(t, sluice.StatusPending, e.get(res.Jobs[0].ID).Status, "nothing was cancelled")
	})
}

func TestGroupsReadOnlyAndAllowedTopics(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		ro := newEnv(t, db, &sluiceweb.Options{Authorize: sluiceweb.AllowAll, ReadOnly: true})
		id := "01a21100-0000-7000-8000-000000000000"
		for _, req := range [][3]string{
			{"POST", "api/workflows", `{"tasks": [{"name": "a", "topic": "mail"}]}`},
			{"POST", "api/workflows/" + id + "/cancel", ""},
			{"POST", "api/workflows/" + id + "/retry", ""},
			{"POST", "api/batches", `{"jobs": [{"topic": "mail"}]}`},
			{"POST", "api/batches/" + id + "/cancel", ""},
			{"POST", "api/batches/" + id + "/retry", ""},
			{"POST", "api/batches/" + id + "/close", ""},
			{"POST", "api/batches/" + id + "/jobs", `{"jobs": [{"topic": "mail"}]}`},
		} {
			ro.do(req[0], req[1], req[2]).problem(t, http.StatusForbidden, sluiceweb.CodeReadOnly)
		}
		ro.do("GET", "api/workflows", "").json(t, http.StatusOK, &groupList{})

		e := newEnv(t, db, &sluiceweb.Options{Authorize: sluiceweb.AllowAll, AllowedTopics: []string{"mail"}})
		e.do("POST", "api/workflows", `{"tasks": [{"name": "a", "topic": "mail"}], "on_complete": [{"topic": "sms"}]}`).
			problem(t, http.StatusForbidden, sluiceweb.CodeForbidden)
		e.do("POST", "api/batches", `{"jobs": [{"topic": "mail"}, {"topic": "sms"}]}`).problem(t, http.StatusForbidden, sluiceweb.CodeForbidden)
		require.Zero(t, e.count())
	})
}
