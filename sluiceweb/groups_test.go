package sluiceweb_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluiceweb"
)

// groupJSON is a workflow or batch as the API answers it.
type groupJSON struct {
	ID         string         `json:"id"`
	Kind       string         `json:"kind"`
	Name       string         `json:"name"`
	Status     string         `json:"status"`
	Counts     map[string]int `json:"counts"`
	StartedAt  time.Time      `json:"started_at"`
	FinishedAt time.Time      `json:"finished_at"`
	SettledAt  time.Time      `json:"settled_at"`
	Outcome    string         `json:"outcome"`
	Jobs       []jobJSON      `json:"jobs"`
	Callbacks  []struct {
		On    string   `json:"on"`
		Topic string   `json:"topic"`
		JobID string   `json:"job_id"`
		Job   *jobJSON `json:"job"`
	} `json:"callbacks"`
}

// groupList is a page of workflows or batches.
type groupList struct {
	Items      []groupJSON `json:"items"`
	NextCursor string      `json:"next_cursor"`
}

// changed is the answer of an action on a group: the jobs changed.
type changed struct {
	Items []jobJSON `json:"items"`
	Count int       `json:"count"`
}

// group reads a workflow or batch (path: "workflows/<id>").
func (e *env) group(path string) groupJSON {
	e.t.Helper()
	var g groupJSON
	e.do("GET", "api/"+path, "").json(e.t, http.StatusOK, &g)
	return g
}

// album is a workflow of a diamond: fetch, two resizes after it, the album
// after both, with a callback on success and one on completion.
const album = `{"name": "album", "tasks": [
	{"name": "fetch", "topic": "mail", "payload": {"to": "fetch@example.com"}},
	{"name": "resize-1", "topic": "mail", "payload": {"to": "r1@example.com"}, "after": ["fetch"], "queue": "bulk", "priority": 3},
	{"name": "resize-2", "topic": "mail", "payload": {"to": "r2@example.com"}, "after": ["fetch"], "tags": ["img"]},
	{"name": "album", "topic": "mail", "payload": {"to": "album@example.com"}, "after": ["resize-1", "resize-2"], "on_dependency_failure": "run"}
], "on_success": [{"topic": "mail", "payload": {"to": "owner@example.com"}}],
   "on_complete": [{"topic": "mail", "payload": {"to": "log@example.com"}, "delay": "0s"}]}`

func TestWorkflowEnqueuedRunAndRead(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		var made struct {
			ID   string    `json:"id"`
			Kind string    `json:"kind"`
			Name string    `json:"name"`
			Jobs []jobJSON `json:"jobs"`
		}
		r := e.do("POST", "api/workflows", album)
		r.json(t, http.StatusCreated, &made)
		require.Equal(t, "workflows/"+made.ID, r.header.Get("Location"))
		require.Equal(t, "workflow", made.Kind)
		require.Equal(t, "album", made.Name)
		require.Len(t, made.Jobs, 4)
		for i, name := range []string{"fetch", "resize-1", "resize-2", "album"} {
			require.Equal(t, name, made.Jobs[i].Task, "the body's order")
			require.Equal(t, made.ID, made.Jobs[i].GroupID)
		}
		require.False(t, made.Jobs[0].Waiting)
		require.True(t, made.Jobs[3].Waiting)
		require.ElementsMatch(t, []string{made.Jobs[1].ID, made.Jobs[2].ID}, made.Jobs[3].DependsOn)
		require.Equal(t, "bulk", made.Jobs[1].Queue)
		require.Equal(t, 3, made.Jobs[1].Priority)
		require.Equal(t, []string{"img"}, made.Jobs[2].Tags)
		require.JSONEq(t, `{"to":"r1@example.com"}`, string(made.Jobs[1].Payload))

		g := e.group("workflows/" + made.ID)
		require.Equal(t, "running", g.Status)
		require.Equal(t, map[string]int{"pending": 4}, g.Counts)
		require.Len(t, g.Jobs, 4)
		require.Len(t, g.Callbacks, 2)
		require.Equal(t, "success", g.Callbacks[0].On)
		require.Equal(t, "complete", g.Callbacks[1].On)
		require.Nil(t, g.Callbacks[0].Job, "not enqueued before the workflow is done")

		var list groupList
		e.do("GET", "api/workflows?name=album&statuses=running", "").json(t, http.StatusOK, &list)
		require.Len(t, list.Items, 1)
		require.Equal(t, made.ID, list.Items[0].ID)
		require.Nil(t, list.Items[0].Jobs, "lists hold no jobs")
		e.do("GET", "api/workflows?statuses=completed", "").json(t, http.StatusOK, &list)
		require.Empty(t, list.Items)
		e.do("GET", "api/batches", "").json(t, http.StatusOK, &list)
		require.Empty(t, list.Items, "a workflow is not a batch")
		e.do("GET", "api/batches/"+made.ID, "").problem(t, http.StatusNotFound, sluiceweb.CodeNotFound)

		// A worker runs it through; its callbacks run after it.
		worker := db.client(t, &sluice.Config{Workers: mailWorkers(func(context.Context, *sluice.Job[mailArgs]) error { return nil }),
			Queues: map[string]sluice.QueueConfig{sluice.QueueDefault: {MaxWorkers: 4}, "bulk": {MaxWorkers: 2}}})
		require.NoError(t, worker.Start(t.Context()))
		t.Cleanup(func() { require.NoError(t, worker.Stop(context.Background())) })
		require.Eventually(t, func() bool {
			g = e.group("workflows/" + made.ID)
			return g.Status == "completed" && g.Callbacks[0].Job != nil && g.Callbacks[0].Job.Status == "completed" &&
				g.Callbacks[1].Job != nil && g.Callbacks[1].Job.Status == "completed"
		}, 15*time.Second, 20*time.Millisecond)
		require.Equal(t, "success", g.Outcome)
		require.False(t, g.StartedAt.IsZero())
		require.False(t, g.FinishedAt.Before(g.StartedAt))
		require.Equal(t, made.ID, g.Callbacks[0].Job.CallbackOf)
		require.Equal(t, g.Callbacks[0].JobID, g.Callbacks[0].Job.ID)

		// Retrying a workflow that completed changes nothing.
		var none changed
		e.do("POST", "api/workflows/"+made.ID+"/retry", "").json(t, http.StatusOK, &none)
		require.Zero(t, none.Count)
		require.Empty(t, none.Items)
	})
}

func TestWorkflowCancelledAndRetried(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil) // its client works nothing: the tasks wait
		var made struct {
			ID string `json:"id"`
		}
		e.do("POST", "api/workflows", album).json(t, http.StatusCreated, &made)

		var cancelled changed
		e.do("POST", "api/workflows/"+made.ID+"/cancel", "").json(t, http.StatusOK, &cancelled)
		require.Equal(t, 4, cancelled.Count)
		for _, j := range cancelled.Items {
			require.Equal(t, "cancelled", j.Status)
		}
		g := e.group("workflows/" + made.ID)
		require.Equal(t, "failed", g.Status)
		require.Equal(t, "failure", g.Outcome)
		require.Equal(t, map[string]int{"cancelled": 4}, g.Counts)
		require.Nil(t, g.Callbacks[0].Job, "no success")
		require.NotNil(t, g.Callbacks[1].Job, "the callback on completion was enqueued with the cancel")
		require.Equal(t, "pending", g.Callbacks[1].Job.Status)

		var retried changed
		e.do("POST", "api/workflows/"+made.ID+"/retry", "").json(t, http.StatusOK, &retried)
		require.Equal(t, 4, retried.Count)
		g = e.group("workflows/" + made.ID)
		require.Equal(t, "running", g.Status)
		require.Equal(t, map[string]int{"pending": 4}, g.Counts)
		require.Empty(t, g.Outcome, "unsettled again")
		require.Nil(t, g.Callbacks[1].Job, "its callbacks wait again, as new jobs")
	})
}

func TestBatchEndpoints(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		var made struct {
			ID   string    `json:"id"`
			Kind string    `json:"kind"`
			Jobs []jobJSON `json:"jobs"`
		}
		r := e.do("POST", "api/batches", `{"name": "imports", "keep_open": true,
			"on_success": [{"topic": "mail", "payload": {"to": "ok@example.com"}}],
			"on_failure": [{"topic": "mail", "payload": {"to": "support@example.com"}, "queue": "bulk"}]}`)
		r.json(t, http.StatusCreated, &made)
		require.Equal(t, "batches/"+made.ID, r.header.Get("Location"))
		require.Equal(t, "batch", made.Kind)
		require.Empty(t, made.Jobs)
		require.Equal(t, "open", e.group("batches/"+made.ID).Status)

		var added changed
		e.do("POST", "api/batches/"+made.ID+"/jobs", `{"jobs": [{"topic": "mail", "payload": {"to": "a@example.com"}},
			{"topic": "mail", "payload": {"to": "b@example.com"}, "run_at": "2030-01-01T00:00:00Z"}]}`).json(t, http.StatusCreated, &added)
		require.Equal(t, 2, added.Count)
		for _, j := range added.Items {
			require.Equal(t, made.ID, j.GroupID)
		}
		var list groupList
		e.do("GET", "api/batches?statuses=open&limit=1", "").json(t, http.StatusOK, &list)
		require.Len(t, list.Items, 1)
		require.Equal(t, map[string]int{"pending": 2}, list.Items[0].Counts)

		var closed groupJSON
		e.do("POST", "api/batches/"+made.ID+"/close", "").json(t, http.StatusOK, &closed)
		require.Equal(t, "running", closed.Status)
		require.Len(t, closed.Jobs, 2)
		e.do("POST", "api/batches/"+made.ID+"/jobs", `{"jobs": [{"topic": "mail"}]}`).problem(t, http.StatusConflict, sluiceweb.CodeBatchClosed)
		var again groupJSON
		e.do("POST", "api/batches/"+made.ID+"/close", "").json(t, http.StatusOK, &again)
		require.Equal(t, "running", again.Status, "closing a closed batch changes nothing")

		var cancelled changed
		e.do("POST", "api/batches/"+made.ID+"/cancel", "").json(t, http.StatusOK, &cancelled)
		require.Equal(t, 2, cancelled.Count)
		g := e.group("batches/" + made.ID)
		require.Equal(t, "failed", g.Status)
		require.Len(t, g.Callbacks, 2)
		require.Nil(t, g.Callbacks[0].Job)
		require.NotNil(t, g.Callbacks[1].Job, "the callback on failure")
		require.Equal(t, "bulk", g.Callbacks[1].Job.Queue)

		var retried changed
		e.do("POST", "api/batches/"+made.ID+"/retry", "").json(t, http.StatusOK, &retried)
		require.Equal(t, 2, retried.Count)
		require.Equal(t, "running", e.group("batches/"+made.ID).Status)

		// A plain batch, and the list's pages.
		for i := range 3 {
			e.do("POST", "api/batches", fmt.Sprintf(`{"name": "mails-%d", "jobs": [{"topic": "mail"}]}`, i)).json(t, http.StatusCreated, &made)
		}
		var first, second groupList
		e.do("GET", "api/batches?limit=2", "").json(t, http.StatusOK, &first)
		require.Len(t, first.Items, 2)
		require.Equal(t, "mails-2", first.Items[0].Name, "newest first")
		require.NotEmpty(t, first.NextCursor)
		e.do("GET", "api/batches?limit=2&cursor="+first.NextCursor, "").json(t, http.StatusOK, &second)
		require.Len(t, second.Items, 2)
		require.Equal(t, "mails-0", second.Items[0].Name)
		require.Equal(t, "imports", second.Items[1].Name)
		if second.NextCursor != "" { // a full page may be followed by an empty one
			var third groupList
			e.do("GET", "api/batches?limit=2&cursor="+second.NextCursor, "").json(t, http.StatusOK, &third)
			require.Empty(t, third.Items)
			require.Empty(t, third.NextCursor)
		}
		var later groupList
		e.do("GET", "api/batches?created_from="+time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "").json(t, http.StatusOK, &later)
		require.Empty(t, later.Items)
	})
}

// TestGroupIDsAndFilters: IDs that are not UUIDs, and those no workflow
// or batch has, and filters out of range.
func TestGroupIDsAndFilters(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		var wf struct {
			ID string `json:"id"`
		}
		e.do("POST", "api/workflows", `{"tasks": [{"name": "a", "topic": "mail"}]}`).json(t, http.StatusCreated, &wf)
		const unknown = "01a21100-0000-7000-8000-000000000000"
		for _, path := range []string{"workflows/%s", "workflows/%s/cancel", "workflows/%s/retry", "batches/%s", "batches/%s/cancel",
			"batches/%s/retry", "batches/%s/close", "batches/%s/jobs"} {
			method, body := "POST", ""
			if strings.Count(path, "/") == 1 {
				method = "GET"
			}
			if strings.HasSuffix(path, "/jobs") {
				body = `{"jobs": [{"topic": "mail"}]}`
			}
			p := e.do(method, "api/"+fmt.Sprintf(path, "not-a-uuid"), body).problem(t, http.StatusBadRequest, sluiceweb.CodeInvalidRequest)
			require.Equal(t, "id", p.Field, path)
			e.do(method, "api/"+fmt.Sprintf(path, "{"+unknown+"}"), body).problem(t, http.StatusBadRequest, sluiceweb.CodeInvalidRequest)
			e.do(method, "api/"+fmt.Sprintf(path, unknown), body).problem(t, http.StatusNotFound, sluiceweb.CodeNotFound)
			if strings.HasPrefix(path, "batches") {
				p := e.do(method, "api/"+fmt.Sprintf(path, wf.ID), body).problem(t, http.StatusNotFound, sluiceweb.CodeNotFound)
				require.Contains(t, p.Detail, "batch", "a workflow's ID names no batch")
			}
		}
		e.do("GET", "api/workflows/"+strings.ToUpper(wf.ID), "").json(t, http.StatusOK, &wf)
		require.Equal(t, 1, e.count(), "nothing was added")

		for _, q := range []struct{ query, field string }{
			{"statuses=done", "statuses[0]"},
			{"limit=-1", "limit"},
			{"limit=10001", "limit"},
			{"limit=x", "limit"},
			{"cursor=nope", "cursor"},
			{"created_from=yesterday", "created_from"},
			{"name=a&name=b", "name"},
			{"topics=mail", "topics"},
		} {
			p := e.do("GET", "api/workflows?"+q.query, "").problem(t, http.StatusBadRequest, sluiceweb.CodeInvalidFilter)
			require.Equal(t, q.field, p.Field, q.query)
		}
		var list groupList
		e.do("GET", "api/workflows?name=%00", "").json(t, http.StatusOK, &list)
		require.Empty(t, list.Items, "a name no workflow can have matches none")
		e.do("GET", "api/workflows?name=%FF", "").json(t, http.StatusOK, &list)
		require.Empty(t, list.Items)
		e.do("GET", "api/workflows/"+wf.ID+"?x=1", "").problem(t, http.StatusBadRequest, sluiceweb.CodeInvalidFilter)
	})
}

func TestJobsOfWorkflowsAndBatchesListedAndActedOn(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		var first, second struct {
			ID string `json:"id"`
		}
		e.do("POST", "api/workflows", `{"tasks": [{"name": "a", "topic": "mail"}, {"name": "b", "topic": "mail", "after": ["a"]}]}`).
			json(t, http.StatusCreated, &first)
		e.do("POST", "api/batches", `{"jobs": [{"topic": "mail"}]}`).json(t, http.StatusCreated, &second)
		e.enqueue(nil) // in neither

		var list struct {
			Items []jobJSON `json:"items"`
			Total int       `json:"total"`
		}
		e.do("GET", "api/jobs?group_ids="+first.ID, "").json(t, http.StatusOK, &list)
		require.Equal(t, 2, list.Total)
		e.do("GET", "api/jobs?group_ids="+first.ID+","+strings.ToUpper(second.ID), "").json(t, http.StatusOK, &list)
		require.Equal(t, 3, list.Total, "an ID in capitals names the same group")
		e.do("GET", "api/jobs?group_ids=01a21100-0000-7000-8000-000000000000", "").json(t, http.StatusOK, &list)
		require.Zero(t, list.Total)
		p := e.do("GET", "api/jobs?group_ids=not-a-uuid", "").problem(t, http.StatusBadRequest, sluiceweb.CodeInvalidFilter)
		require.Equal(t, "group_ids[0]", p.Field)

		var res struct {
			Count int `json:"count"`
		}
		e.do("POST", "api/jobs/cancel", `{"group_ids": ["`+second.ID+`"]}`).json(t, http.StatusOK, &res)
		require.Equal(t, 1, res.Count, "the batch's job, and no other")
		e.do("GET", "api/jobs?statuses=cancelled", "").json(t, http.StatusOK, &list)
		require.Equal(t, 1, list.Total)
		e.do("POST", "api/jobs/cancel", `{"group_ids": ["x"]}`).problem(t, http.StatusBadRequest, sluiceweb.CodeInvalidFilter)
		require.Equal(t, 1, res.Count)
	})
}
