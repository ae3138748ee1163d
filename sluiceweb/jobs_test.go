package sluiceweb_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluiceweb"
)

type enqueued struct {
	Job       jobJSON `json:"job"`
	Duplicate bool    `json:"duplicate"`
}

func TestEnqueue(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		var res enqueued
		e.do("POST", "api/jobs", `{"topic": "mail", "payload": { "to" : "a@example.com" }, "queue": "bulk",
			"priority": -5, "max_retries": 7, "unique_key": "k1", "run_at": "2030-01-02T03:04:05.123456Z"}`).
			json(t, http.StatusCreated, &res)
		require.False(t, res.Duplicate)
		job := res.Job
		require.Equal(t, "mail", job.Topic)
		require.JSONEq(t, `{"to":"a@example.com"}`, string(job.Payload))
		require.Equal(t, "bulk", job.Queue)
		require.Equal(t, -5, job.Priority)
		require.Equal(t, 7, job.MaxRetries)
		require.Equal(t, "k1", job.UniqueKey)
		require.Equal(t, "pending", job.Status)
		require.True(t, job.RunAt.Equal(time.Date(2030, 1, 2, 3, 4, 5, 123456000, time.UTC)))

		var dup enqueued
		e.do("POST", "api/jobs/enqueue", `{"topic": "mail", "payload": {"to": "b@example.com"}, "unique_key": "k1"}`).
			json(t, http.StatusOK, &dup)
		require.True(t, dup.Duplicate)
		require.Equal(t, job.ID, dup.Job.ID)

		var delayed enqueued
		e.do("POST", "api/jobs", `{"topic": "mail", "delay": "90m", "max_retries": 0}`).json(t, http.StatusCreated, &delayed)
		require.JSONEq(t, `{}`, string(delayed.Job.Payload))
		require.Equal(t, 0, delayed.Job.MaxRetries, "0 means no retries")
		require.WithinDuration(t, time.Now().Add(90*time.Minute), delayed.Job.RunAt, time.Minute)

		var plain enqueued
		e.do("POST", "api/jobs", `{"topic": "mail", "payload": null}`).json(t, http.StatusCreated, &plain)
		require.Equal(t, sluice.DefaultMaxRetries, plain.Job.MaxRetries)
		require.JSONEq(t, `{}`, string(plain.Job.Payload))

		var waiting enqueued
		e.do("POST", "api/jobs", `{"topic": "mail", "depends_on": ["`+plain.Job.ID+`"], "on_dependency_failure": "run"}`).
			json(t, http.StatusCreated, &waiting)
		require.True(t, waiting.Job.Waiting)
		require.Equal(t, []string{plain.Job.ID}, waiting.Job.DependsOn)
	})
}

func TestEnqueueRefusesBadInputAndWritesNothing(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", sluice.DefaultMaxPayloadBytes)
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		for _, tc := range []struct {
			name, body string
			status     int
			code       string
			field      string
		}{
			{"not JSON", `{"topic": `, 400, sluiceweb.CodeInvalidRequest, ""},
			{"no object", `["mail"]`, 400, sluiceweb.CodeInvalidRequest, ""},
			{"empty body", ``, 400, sluiceweb.CodeInvalidRequest, ""},
			{"two values", `{"topic": "mail"} {}`, 400, sluiceweb.CodeInvalidRequest, ""},
			{"unknown field", `{"topic": "mail", "args": {}}`, 400, sluiceweb.CodeInvalidRequest, "args"},
			{"ill-typed field", `{"topic": 5}`, 400, sluiceweb.CodeInvalidRequest, "topic"},
			{"no topic", `{"payload": {}}`, 400, sluiceweb.CodeInvalidRequest, "topic"},
			{"NUL in topic", `{"topic": "ma\u0000il"}`, 400, sluiceweb.CodeInvalidRequest, "topic"},
			{"malformed run_at", `{"topic": "mail", "run_at": "tomorrow"}`, 400, sluiceweb.CodeInvalidRequest, "run_at"},
			{"malformed delay", `{"topic": "mail", "delay": "soon"}`, 400, sluiceweb.CodeInvalidRequest, "delay"},
			{"negative delay", `{"topic": "mail", "delay": "-1m"}`, 400, sluiceweb.CodeInvalidRequest, "delay"},
			{"run_at and delay", `{"topic": "mail", "delay": "1m", "run_at": "2030-01-01T00:00:00Z"}`, 400, sluiceweb.CodeInvalidRequest, "delay"},
			{"negative max_retries", `{"topic": "mail", "max_retries": -1}`, 400, sluiceweb.CodeInvalidRequest, "max_retries"},
			{"priority out of range", `{"topic": "mail", "priority": 99999}`, 400, sluiceweb.CodeInvalidRequest, "priority"},
			{"NUL in unique key", `{"topic": "mail", "unique_key": "a\u0000b"}`, 400, sluiceweb.CodeInvalidRequest, "unique_key"},
			{"unknown queue", `{"topic": "mail", "queue": "nope"}`, 400, sluiceweb.CodeUnknownQueue, "queue"},
			{"dependency not an ID", `{"topic": "mail", "depends_on": ["nope"]}`, 400, sluiceweb.CodeInvalidRequest, "depends_on"},
			{"unknown dependency policy", `{"topic": "mail", "depends_on": ["0190f5d2-0000-7000-8000-000000000001"], "on_dependency_failure": "ignore"}`,
				400, sluiceweb.CodeInvalidRequest, "on_dependency_failure"},
			{"sequence without a key", `{"topic": "mail", "sequence": "hold"}`, 400, sluiceweb.CodeInvalidRequest, "sequence"},
			{"unknown sequence policy", `{"topic": "mail", "key": "acme", "sequence": "later"}`, 400, sluiceweb.CodeInvalidRequest, "sequence"},
			{"key too long", `{"topic": "mail", "key": "` + strings.Repeat("k", sluice.MaxKeyBytes+1) + `"}`, 400, sluiceweb.CodeInvalidRequest, "key"},
			{"NUL in key", `{"topic": "mail", "key": "a\u0000b"}`, 400, sluiceweb.CodeInvalidRequest, "key"},
			{"unknown topic", `{"topic": "sms", "payload": {}}`, 400, sluiceweb.CodeUnknownTopic, "topic"},
			{"payload of the wrong type", `{"topic": "mail", "payload": {"to": 5}}`, 400, sluiceweb.CodeInvalidPayload, "payload"},
			{"payload with an unknown field", `{"topic": "mail", "payload": {"too": "a"}}`, 400, sluiceweb.CodeInvalidPayload, "payload"},
			{"payload with a NUL", `{"topic": "mail", "payload": {"to": "a\u0000"}}`, 400, sluiceweb.CodeInvalidPayload, "payload"},
			{"payload over the limit", `{"topic": "mail", "payload": {"to": "` + big + `"}}`, 413, sluiceweb.CodePayloadTooLarge, "payload"},
			{"body over the limit", `{"topic": "mail", "payload": {"to": "` + big + big + `"}}`, 413, sluiceweb.CodePayloadTooLarge, ""},
		} {
			p := e.do("POST", "api/jobs", tc.body, "Content-Type", "application/json").problem(t, tc.status, tc.code)
			require.Equal(t, tc.field, p.Field, tc.name)
		}
		var list struct {
			Total int `json:"total"`
		}
		e.do("GET", "api/jobs", "").json(t, http.StatusOK, &list)
		require.Zero(t, list.Total, "nothing was written")
	})
}

// workedJobs works three jobs on a started client of db: one that panics
// (no retries), one that fails and will be retried, and one that reports
// progress, logs three records (of which it keeps two) and completes with
// a result. It returns their IDs.
func workedJobs(t *testing.T, e *env) (panicked, retried, completed string) {
	t.Helper()
	worker := e.db.client(t, &sluice.Config{
		Workers: mailWorkers(func(ctx context.Context, job *sluice.Job[mailArgs]) error {
			switch job.Args.To {
			case "panic":
				panic("boom")
			case "fail":
				return errors.New("smtp is down")
			}
			log := sluice.Logger(ctx)
			log.Debug("not kept: below the level")
			log.Info("connecting")
			log.Warn("slow server", "after", 2*time.Second, slog.Group("smtp", "host", "mx.example.com"))
			log.Info("sent", "to", job.Args.To)
			if err := sluice.ReportProgress(ctx, 100, "sent"); err != nil {
				return err
			}
			return sluice.SetResult(ctx, map[string]string{"message_id": "m1"})
		}),
		RetryPolicy: laterRetry{},
		JobLogs:     sluice.JobLogConfig{MaxRecords: 2},
	})
	require.NoError(t, worker.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, worker.Stop(context.Background())) })
	ids := make([]string, 3)
	for i, to := range []string{"panic", "fail", "ok"} {
		opts := &sluice.EnqueueOptions{}
		if to == "panic" {
			opts.MaxRetries = sluice.NoRetries
		}
		res, err := worker.Enqueue(t.Context(), mailArgs{To: to}, opts)
		require.NoError(t, err)
		ids[i] = res.Job.ID
	}
	for i, want := range []sluice.JobStatus{sluice.StatusFailed, sluice.StatusPending, sluice.StatusCompleted} {
		require.Eventually(t, func() bool {
			job, err := worker.Get(t.Context(), ids[i])
			require.NoError(t, err)
			return job.Status == want && job.Attempt == 1
		}, 15*time.Second, 10*time.Millisecond, "job %d", i)
	}
	return ids[0], ids[1], ids[2]
}

// laterRetry retries in an hour.
type laterRetry struct{}

func (laterRetry) NextRetry(_ *sluice.JobRow, failedAt time.Time) time.Time {
	return failedAt.Add(time.Hour)
}

func TestGetJob(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		panicked, retried, completed := workedJobs(t, e)
		var job jobJSON
		e.do("GET", "api/jobs/"+panicked, "").json(t, http.StatusOK, &job)
		require.Equal(t, "failed", job.Status)
		require.Len(t, job.History, 1)
		require.Contains(t, job.History[0].Error, "boom")
		require.Contains(t, job.History[0].Trace, "goroutine", "the panic's stack")

		e.do("GET", "api/jobs/"+retried, "").json(t, http.StatusOK, &job)
		require.Equal(t, "pending", job.Status)
		require.Equal(t, "smtp is down", job.History[0].Error)

		var ex struct {
			Reason string `json:"reason"`
			Text   string `json:"text"`
		}
		e.do("GET", "api/jobs/"+retried+"/explain", "").json(t, http.StatusOK, &ex)
		require.Equal(t, "backoff", ex.Reason)
		require.Contains(t, ex.Text, "smtp is down")

		// Its logs: the newest two records, and the count of those
		// dropped. Lists leave them out.
		e.do("GET", "api/jobs/"+completed, "").json(t, http.StatusOK, &job)
		require.Len(t, job.Logs, 2)
		require.Equal(t, 1, *job.LogsDropped)
		warn, sent := job.Logs[0], job.Logs[1]
		require.Equal(t, logJSON{Attempt: 1, Level: "WARN", Time: warn.Time, Message: "slow server",
			Attrs: warn.Attrs}, warn)
		require.JSONEq(t, `{"after": "2s", "smtp": {"host": "mx.example.com"}}`, string(warn.Attrs))
		require.Equal(t, "INFO", sent.Level)
		require.JSONEq(t, `{"to": "ok"}`, string(sent.Attrs))
		require.False(t, sent.Time.Before(warn.Time))
		e.do("GET", "api/jobs/"+panicked, "").json(t, http.StatusOK, &job)
		require.NotNil(t, job.Logs, "logs is an empty list when there are none")
		require.Empty(t, job.Logs)
		require.Zero(t, *job.LogsDropped)
		list := e.do("GET", "api/jobs?statuses=completed", "")
		require.Equal(t, http.StatusOK, list.status)
		require.Contains(t, string(list.body), completed)
		require.NotContains(t, string(list.body), `"logs`)

		missing := "0190f5d2-0000-7000-8000-000000000001"
		for _, path := range []string{"api/jobs/", "api/jobs/%s/explain"} {
			if !strings.Contains(path, "%s") {
				path += "%s"
			}
			e.do("GET", fmt.Sprintf(path, missing), "").problem(t, http.StatusNotFound, sluiceweb.CodeNotFound)
			p := e.do("GET", fmt.Sprintf(path, "not-a-uuid"), "").problem(t, http.StatusBadRequest, sluiceweb.CodeInvalidRequest)
			require.Equal(t, "id", p.Field)
		}
	})
}

// listIDs lists through the handler with query and returns the IDs, total
// and next cursor.
func (e *env) listIDs(query string) (ids []string, total int, next string) {
	e.t.Helper()
	var page struct {
		Items      []jobJSON `json:"items"`
		Total      int       `json:"total"`
		NextCursor string    `json:"next_cursor"`
	}
	e.do("GET", "api/jobs?"+query, "").json(e.t, http.StatusOK, &page)
	for _, j := range page.Items {
		ids = append(ids, j.ID)
	}
	return ids, page.Total, page.NextCursor
}

func TestListJobs(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		before := time.Now().UTC()
		var ids []string
		for i := range 5 {
			ids = append(ids, e.enqueue(&sluice.EnqueueOptions{RunAt: before.Add(time.Duration(i+1) * time.Hour),
				Queue: []string{"default", "bulk"}[i%2], UniqueKey: fmt.Sprintf("key-%d", i)}))
		}
		_, err := e.client.Cancel(t.Context(), ids[4])
		require.NoError(t, err)

		got, total, _ := e.listIDs("")
		require.Equal(t, ids, got)
		require.Equal(t, 5, total)
		got, _, _ = e.listIDs("order=newest&limit=2")
		require.Equal(t, []string{ids[4], ids[3]}, got)
		got, total, _ = e.listIDs("queues=bulk")
		require.Equal(t, []string{ids[1], ids[3]}, got)
		require.Equal(t, 2, total)
		got, _, _ = e.listIDs("statuses=cancelled&topics=mail")
		require.Equal(t, []string{ids[4]}, got)
		got, _, _ = e.listIDs("statuses=pending,failed&statuses=processing")
		require.Equal(t, ids[:4], got)
		got, _, _ = e.listIDs("unique_key=key-2")
		require.Equal(t, []string{ids[2]}, got)
		got, _, _ = e.listIDs("run_at_from=" + url.QueryEscape(before.Add(150*time.Minute).Format(time.RFC3339Nano)) +
			"&run_at_before=" + url.QueryEscape(before.Add(270*time.Minute).Format(time.RFC3339Nano)))
		require.Equal(t, []string{ids[2], ids[3]}, got)
		got, _, _ = e.listIDs("created_from=" + url.QueryEscape(before.Add(-time.Minute).Format(time.RFC3339)) + "&created_before=2099-01-01T00:00:00Z")
		require.Equal(t, ids, got)
		got, _, _ = e.listIDs("offset=3&limit=1")
		require.Equal(t, []string{ids[3]}, got)

		var paged []string
		cursor := ""
		for {
			page, total, next := e.listIDs("limit=2&cursor=" + cursor)
			require.Equal(t, 5, total)
			paged = append(paged, page...)
			if next == "" {
				break
			}
			cursor = next
		}
		require.Equal(t, ids, paged)

		for _, tc := range []struct{ query, field string }{
			{"limit=-1", "limit"},
			{"limit=ten", "limit"},
			{"limit=1&limit=2", "limit"},
			{"limit=10001", "limit"},
			{"offset=-1", "offset"},
			{"order=sideways", "order"},
			{"statuses=pending,lost", "statuses[1]"},
			{"created_from=yesterday", "created_from"},
			{"run_at_before=2030-13-01T00:00:00Z", "run_at_before"},
			{"cursor=garbage", "cursor"},
			{"cursor=" + cursor + "&offset=1", "cursor"},
			{"order=newest&cursor=" + cursor, "cursor"},
			{"sort=id", "sort"},
		} {
			p := e.do("GET", "api/jobs?"+tc.query, "").problem(t, http.StatusBadRequest, sluiceweb.CodeInvalidFilter)
			require.Equal(t, tc.field, p.Field, tc.query)
		}
	})
}
