package sluiceweb_test

import (
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluiceweb"
)

// jobOf decodes a response holding {"job": ...}.
func jobOf(t *testing.T, r *response) jobJSON {
	t.Helper()
	var res struct {
		Job jobJSON `json:"job"`
	}
	r.json(t, http.StatusOK, &res)
	return res.Job
}

func TestActOnOneJob(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		id := e.enqueue(nil)

		job := jobOf(t, e.do("POST", "api/jobs/"+id+"/retry", ""))
		require.WithinDuration(t, time.Now(), job.RunAt, time.Minute, "due now")
		p := e.do("POST", "api/jobs/"+id+"/requeue", "").problem(t, http.StatusConflict, sluiceweb.CodeStatusConflict)
		require.Equal(t, "pending", p.JobStatus)
		require.Equal(t, "cancelled", jobOf(t, e.do("POST", "api/jobs/"+id+"/cancel", "")).Status)
		p = e.do("POST", "api/jobs/"+id+"/cancel", "").problem(t, http.StatusConflict, sluiceweb.CodeStatusConflict)
		require.Equal(t, "cancelled", p.JobStatus)
		require.Equal(t, "pending", jobOf(t, e.do("POST", "api/jobs/"+id+"/requeue", "")).Status)
		require.Equal(t, id, jobOf(t, e.do("DELETE", "api/jobs/"+id, "")).ID)

		for _, req := range [][2]string{{"POST", "/cancel"}, {"POST", "/requeue"}, {"POST", "/retry"}, {"DELETE", ""}} {
			e.do(req[0], "api/jobs/"+id+req[1], "").problem(t, http.StatusNotFound, sluiceweb.CodeNotFound)
			e.do(req[0], "api/jobs/1234"+req[1], "").problem(t, http.StatusBadRequest, sluiceweb.CodeInvalidRequest)
		}
	})
}

func TestDeleteRefusesAProcessingJob(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		started, release := make(chan string, 1), make(chan struct{})
		worker := db.client(t, &sluice.Config{Workers: mailWorkers(func(_ context.Context, job *sluice.Job[mailArgs]) error {
			started <- job.ID
			<-release
			return nil
		})})
		require.NoError(t, worker.Start(t.Context()))
		t.Cleanup(func() {
			close(release)
			require.NoError(t, worker.Stop(context.Background()))
		})
		id := e.enqueue(&sluice.EnqueueOptions{})
		require.Equal(t, id, <-started)
		p := e.do("DELETE", "api/jobs/"+id, "").problem(t, http.StatusConflict, sluiceweb.CodeStatusConflict)
		require.Equal(t, "processing", p.JobStatus)
	})
}

func TestActOnJobsAFilterSelects(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		for range 3 {
			e.enqueue(nil)
		}
		e.enqueue(&sluice.EnqueueOptions{Queue: "bulk", RunAt: time.Now().Add(time.Hour)})
		var res struct {
			Items []jobJSON `json:"items"`
			Count int       `json:"count"`
		}
		e.do("POST", "api/jobs/retry", `{"queues": ["bulk"]}`).json(t, http.StatusOK, &res)
		require.Equal(t, 1, res.Count)
		e.do("POST", "api/jobs/cancel", `{"topics": ["mail"], "statuses": ["pending"]}`).json(t, http.StatusOK, &res)
		require.Equal(t, 4, res.Count)
		require.Len(t, res.Items, 4)
		e.do("POST", "api/jobs/requeue", `{"queues": ["bulk"], "created_before": "2099-01-01T00:00:00Z"}`).json(t, http.StatusOK, &res)
		require.Equal(t, 1, res.Count)
		e.do("POST", "api/jobs/delete", `{"statuses": ["cancelled"]}`).json(t, http.StatusOK, &res)
		require.Equal(t, 3, res.Count)
		e.do("POST", "api/jobs/delete", `{"statuses": ["cancelled"]}`).json(t, http.StatusOK, &res)
		require.Equal(t, 0, res.Count)
		require.NotNil(t, res.Items, "an empty list, not null")

		for _, tc := range []struct{ body, code, field string }{
			{`{}`, sluiceweb.CodeInvalidFilter, "filter"},
			{`{"topics": []}`, sluiceweb.CodeInvalidFilter, "filter"},
			{`{"statuses": ["lost"]}`, sluiceweb.CodeInvalidFilter, "statuses[0]"},
			{`{"topics": [""]}`, sluiceweb.CodeInvalidFilter, "topics[0]"},
			{`{"run_at_from": "now"}`, sluiceweb.CodeInvalidFilter, "run_at_from"},
			{`{"topic": "mail"}`, sluiceweb.CodeInvalidRequest, "topic"},
			{`{"topics": "mail"}`, sluiceweb.CodeInvalidRequest, "topics"},
			{`[]`, sluiceweb.CodeInvalidRequest, ""},
			{``, sluiceweb.CodeInvalidRequest, ""},
		} {
			for _, a := range []string{"cancel", "requeue", "retry", "delete"} {
				p := e.do("POST", "api/jobs/"+a, tc.body, "Content-Type", "application/json").problem(t, http.StatusBadRequest, tc.code)
				require.Equal(t, tc.field, p.Field, "%s %s", a, tc.body)
			}
		}
	})
}

func TestStats(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		// Nothing finished yet: no rate, null rather than 1 or 0.
		var empty map[string]any
		e.do("GET", "api/jobs/stats", "").json(t, http.StatusOK, &empty)
		require.Contains(t, empty, "success_rate")
		require.Nil(t, empty["success_rate"])

		workedJobs(t, e)
		e.enqueue(&sluice.EnqueueOptions{Queue: "bulk"})
		var st struct {
			Total         int                       `json:"total"`
			ByStatus      map[string]int            `json:"by_status"`
			ByTopic       map[string]map[string]int `json:"by_topic"`
			ByQueue       map[string]map[string]int `json:"by_queue"`
			Completed     int                       `json:"completed"`
			Failed        int                       `json:"failed"`
			SuccessRate   *float64                  `json:"success_rate"`
			WindowSeconds float64                   `json:"window_seconds"`
			BucketSeconds float64                   `json:"bucket_seconds"`
			Series        []struct {
				Start     time.Time `json:"start"`
				Completed int       `json:"completed"`
				Failed    int       `json:"failed"`
			} `json:"series"`
		}
		e.do("GET", "api/jobs/stats", "").json(t, http.StatusOK, &st)
		require.Equal(t, 4, st.Total)
		require.Equal(t, map[string]int{"pending": 2, "failed": 1, "completed": 1}, st.ByStatus)
		require.Equal(t, 1, st.ByQueue["bulk"]["pending"])
		require.Equal(t, 4, st.ByTopic["mail"]["pending"]+st.ByTopic["mail"]["failed"]+st.ByTopic["mail"]["completed"])
		require.Equal(t, 1, st.Completed)
		require.Equal(t, 1, st.Failed)
		require.NotNil(t, st.SuccessRate)
		require.Equal(t, 0.5, *st.SuccessRate)
		require.Equal(t, 3600.0, st.WindowSeconds)
		require.Equal(t, 60.0, st.BucketSeconds)
		require.GreaterOrEqual(t, len(st.Series), 60, "a point a minute for an hour")
		last := st.Series[len(st.Series)-1]
		prev := st.Series[len(st.Series)-2]
		require.Equal(t, 1, last.Completed+prev.Completed, "the completion is in the last minute or two")

		e.do("GET", "api/jobs/stats?window=10m&bucket=10s&topics=mail&queues=default", "").json(t, http.StatusOK, &st)
		require.Equal(t, 3, st.Total)
		require.GreaterOrEqual(t, len(st.Series), 60)
		require.Equal(t, 10.0, st.BucketSeconds)

		for _, tc := range []struct{ query, field string }{
			{"window=soon", "window"},
			{"window=-1h", "window"},
			{"bucket=1ms", "bucket"},
			{"window=24h&bucket=1s", "bucket"},
			{"topics=mail&limit=3", "limit"},
		} {
			p := e.do("GET", "api/jobs/stats?"+tc.query, "").problem(t, http.StatusBadRequest, sluiceweb.CodeInvalidFilter)
			require.Equal(t, tc.field, p.Field, tc.query)
		}
	})
}

func TestQueuesAndClients(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		e.enqueue(nil)
		e.enqueue(&sluice.EnqueueOptions{Queue: "bulk"})
		worker := db.client(t, &sluice.Config{
			Workers: mailWorkers(func(context.Context, *sluice.Job[mailArgs]) error { return nil }),
			Queues:  map[string]sluice.QueueConfig{"other": {MaxWorkers: 7}},
		})
		require.NoError(t, worker.Start(t.Context()))
		t.Cleanup(func() { require.NoError(t, worker.Stop(context.Background())) })

		var queues struct {
			Items []struct {
				Name    string         `json:"name"`
				Counts  map[string]int `json:"counts"`
				Total   int            `json:"total"`
				Clients int            `json:"clients"`
				Workers int            `json:"workers"`
			} `json:"items"`
		}
		e.do("GET", "api/queues", "").json(t, http.StatusOK, &queues)
		require.Len(t, queues.Items, 3)
		require.Equal(t, "bulk", queues.Items[0].Name)
		require.Equal(t, 1, queues.Items[0].Counts["pending"])
		require.Equal(t, "default", queues.Items[1].Name)
		require.Equal(t, 1, queues.Items[1].Total)
		require.Zero(t, queues.Items[1].Clients)
		require.Equal(t, "other", queues.Items[2].Name)
		require.Equal(t, 1, queues.Items[2].Clients)
		require.Equal(t, 7, queues.Items[2].Workers)

		var clients struct {
			Items []struct {
				ID         string         `json:"id"`
				PID        int            `json:"pid"`
				Topics     []string       `json:"topics"`
				MaxWorkers map[string]int `json:"max_workers"`
				Online     bool           `json:"online"`
			} `json:"items"`
		}
		e.do("GET", "api/clients", "").json(t, http.StatusOK, &clients)
		require.Len(t, clients.Items, 1)
		c := clients.Items[0]
		require.Equal(t, os.Getpid(), c.PID)
		require.Equal(t, []string{"mail"}, c.Topics)
		require.Equal(t, map[string]int{"other": 7}, c.MaxWorkers)
		require.True(t, c.Online)

		e.do("GET", "api/queues?x=1", "").problem(t, http.StatusBadRequest, sluiceweb.CodeInvalidFilter)
		e.do("GET", "api/clients?x=1", "").problem(t, http.StatusBadRequest, sluiceweb.CodeInvalidFilter)
	})
}

func TestPauseAndResumeQueue(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		e.enqueue(nil)
		var st struct {
			Queue     string    `json:"queue"`
			Paused    bool      `json:"paused"`
			UpdatedAt time.Time `json:"updated_at"`
		}
		e.do("POST", "api/queues/default/pause", "").json(t, http.StatusOK, &st)
		require.Equal(t, "default", st.Queue)
		require.True(t, st.Paused)
		require.False(t, st.UpdatedAt.IsZero())

		var queues struct {
			Items []struct {
				Name   string `json:"name"`
				Paused bool   `json:"paused"`
			} `json:"items"`
		}
		e.do("GET", "api/queues", "").json(t, http.StatusOK, &queues)
		require.Len(t, queues.Items, 1)
		require.True(t, queues.Items[0].Paused)
		states, err := e.client.QueueStates(t.Context())
		require.NoError(t, err)
		require.True(t, states[0].Paused)

		// A queue with no jobs is listed once it has a state.
		e.do("POST", "api/queues/empty/pause", "").json(t, http.StatusOK, &st)
		e.do("POST", "api/queues/default/resume", "").json(t, http.StatusOK, &st)
		require.False(t, st.Paused)
		e.do("GET", "api/queues", "").json(t, http.StatusOK, &queues)
		require.Len(t, queues.Items, 2)
		require.Equal(t, "default", queues.Items[0].Name)
		require.False(t, queues.Items[0].Paused)
		require.Equal(t, "empty", queues.Items[1].Name)
		require.True(t, queues.Items[1].Paused)

		e.do("POST", "api/queues/no%20spaces/pause", "").problem(t, http.StatusBadRequest, sluiceweb.CodeInvalidRequest)
		e.do("GET", "api/queues/default/pause", "").problem(t, http.StatusMethodNotAllowed, sluiceweb.CodeMethodNotAllowed)
	})
}

func TestUnknownPathsAndMethods(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		e.do("GET", "api/nope", "").problem(t, http.StatusNotFound, sluiceweb.CodeNotFound)
		e.do("GET", "api/jobs/a/b/c", "").problem(t, http.StatusNotFound, sluiceweb.CodeNotFound)
		r := e.do("DELETE", "api/jobs", "")
		r.problem(t, http.StatusMethodNotAllowed, sluiceweb.CodeMethodNotAllowed)
		require.Equal(t, "GET, HEAD, POST", r.header.Get("Allow"))
		r = e.do("PUT", "api/jobs/0190f5d2-0000-7000-8000-000000000001", "{}")
		r.problem(t, http.StatusMethodNotAllowed, sluiceweb.CodeMethodNotAllowed)
		require.Equal(t, "GET, HEAD, DELETE", r.header.Get("Allow"))
		e.do("POST", "api/queues", "").problem(t, http.StatusMethodNotAllowed, sluiceweb.CodeMethodNotAllowed)
		require.Equal(t, http.StatusOK, e.do("GET", "api/openapi.json", "").status)
	})
}
