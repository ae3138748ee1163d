package sluiceweb_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluiceweb"
)

// scheduleJSON is a schedule as the API answers it.
type scheduleJSON struct {
	Name       string          `json:"name"`
	Cron       string          `json:"cron"`
	TimeZone   string          `json:"time_zone"`
	Topic      string          `json:"topic"`
	Payload    json.RawMessage `json:"payload"`
	Queue      string          `json:"queue"`
	Priority   int             `json:"priority"`
	MaxRetries *int            `json:"max_retries"`
	Enabled    bool            `json:"enabled"`
	CatchUp    string          `json:"catch_up"`
	NextRunAt  time.Time       `json:"next_run_at"`
	LastRunAt  time.Time       `json:"last_run_at"`
	LastJobID  string          `json:"last_job_id"`
	CreatedAt  time.Time       `json:"created_at"`
	UpdatedAt  time.Time       `json:"updated_at"`
}

// schedule decodes a response holding one schedule, requiring status.
func (r *response) schedule(t *testing.T, status int) scheduleJSON {
	t.Helper()
	var s scheduleJSON
	r.json(t, status, &s)
	return s
}

// scheduleNames lists the schedules through the handler.
func (e *env) scheduleNames() []string {
	e.t.Helper()
	var list struct {
		Items []scheduleJSON `json:"items"`
	}
	e.do("GET", "api/schedules", "").json(e.t, http.StatusOK, &list)
	names := []string{}
	for _, s := range list.Items {
		names = append(names, s.Name)
	}
	return names
}

func TestSchedules(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		require.Empty(t, e.scheduleNames())

		r := e.do("POST", "api/schedules", `{"name": "daily digest", "cron": "0 9 * * *", "time_zone": "Europe/Paris",
			"topic": "mail", "payload": {"to": "team@example.com"}, "queue": "bulk", "priority": 3, "max_retries": 0,
			"catch_up": "skip"}`)
		created := r.schedule(t, http.StatusCreated)
		require.Equal(t, "schedules/daily%20digest", r.header.Get("Location"))
		require.Equal(t, "daily digest", created.Name)
		require.Equal(t, "Europe/Paris", created.TimeZone)
		require.JSONEq(t, `{"to": "team@example.com"}`, string(created.Payload))
		require.Equal(t, "bulk", created.Queue)
		require.Equal(t, 3, created.Priority)
		require.Equal(t, 0, *created.MaxRetries, "0: no retries")
		require.True(t, created.Enabled)
		require.Equal(t, "skip", created.CatchUp)
		paris, err := time.LoadLocation("Europe/Paris")
		require.NoError(t, err)
		next := created.NextRunAt.In(paris)
		require.Equal(t, 9, next.Hour(), "9:00 in Paris")
		require.True(t, next.After(time.Now()))
		require.False(t, created.CreatedAt.IsZero())
		require.Empty(t, created.LastJobID)

		plain := e.do("POST", "api/schedules", `{"name": "hourly", "cron": "@hourly", "topic": "mail"}`).
			schedule(t, http.StatusCreated)
		require.Nil(t, plain.MaxRetries, "the default")
		require.JSONEq(t, `{}`, string(plain.Payload))
		require.Equal(t, "default", plain.Queue)
		require.Equal(t, "once", plain.CatchUp)
		require.Empty(t, plain.TimeZone, "UTC")
		require.Equal(t, []string{"daily digest", "hourly"}, e.scheduleNames())
		got := e.do("GET", "api/schedules/daily%20digest", "").schedule(t, http.StatusOK)
		require.Equal(t, created, got)

		// Disabled: no next tick; a PUT replaces every member.
		paused := e.do("PUT", "api/schedules/hourly", `{"cron": "@hourly", "topic": "mail", "enabled": false, "max_retries": 5}`).
			schedule(t, http.StatusOK)
		require.False(t, paused.Enabled)
		require.True(t, paused.NextRunAt.IsZero())
		require.Equal(t, 5, *paused.MaxRetries)
		resumed := e.do("PUT", "api/schedules/hourly", `{"name": "hourly", "cron": "*/5 * * * *", "topic": "mail"}`).
			schedule(t, http.StatusOK)
		require.True(t, resumed.Enabled, "enabled when absent")
		require.Nil(t, resumed.MaxRetries)
		require.Zero(t, resumed.NextRunAt.Minute()%5)
		require.Equal(t, plain.CreatedAt, resumed.CreatedAt)
		require.True(t, resumed.UpdatedAt.After(plain.UpdatedAt))

		deleted := e.do("DELETE", "api/schedules/hourly", "").schedule(t, http.StatusOK)
		require.Equal(t, "*/5 * * * *", deleted.Cron)
		require.Equal(t, []string{"daily digest"}, e.scheduleNames())
		for _, req := range [][3]string{
			{"GET", "api/schedules/hourly", ""},
			{"DELETE", "api/schedules/hourly", ""},
			{"PUT", "api/schedules/hourly", `{"cron": "@daily", "topic": "mail"}`},
		} {
			e.do(req[0], req[1], req[2]).problem(t, http.StatusNotFound, sluiceweb.CodeNotFound)
		}
		e.do("PATCH", "api/schedules/daily%20digest", "{}").problem(t, http.StatusMethodNotAllowed, sluiceweb.CodeMethodNotAllowed)
	})
}

func TestSchedulesShowTheirRuns(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		e.do("POST", "api/schedules", `{"name": "tick", "cron": "@every 1s", "topic": "mail", "payload": {"to": "t@example.com"}}`).
			schedule(t, http.StatusCreated)
		// Another client runs it: the handler's own is never started.
		worker := db.client(t, &sluice.Config{
			Workers:      mailWorkers(func(context.Context, *sluice.Job[mailArgs]) error { return nil }),
			PollInterval: 50 * time.Millisecond,
		})
		require.NoError(t, worker.Start(t.Context()))
		t.Cleanup(func() { require.NoError(t, worker.Stop(context.Background())) })
		var s scheduleJSON
		require.Eventually(t, func() bool {
			s = e.do("GET", "api/schedules/tick", "").schedule(t, http.StatusOK)
			return s.LastJobID != ""
		}, 15*time.Second, 50*time.Millisecond)
		require.False(t, s.LastRunAt.IsZero())
		require.True(t, s.NextRunAt.After(s.LastRunAt))
		var job jobJSON
		e.do("GET", "api/jobs/"+s.LastJobID, "").json(t, http.StatusOK, &job)
		require.Equal(t, "mail", job.Topic)
		require.JSONEq(t, `{"to": "t@example.com"}`, string(job.Payload))
	})
}

func TestSchedulesRefuseBadInputAndWriteNothing(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		e.do("POST", "api/schedules", `{"name": "taken", "cron": "@daily", "topic": "mail"}`).schedule(t, http.StatusCreated)
		before := e.do("GET", "api/schedules/taken", "").schedule(t, http.StatusOK)
		long := strings.Repeat("n", 201)
		for _, tc := range []struct {
			name, body string
			code       string
			field      string
		}{
			{"invalid cron", `{"name": "a", "cron": "61 * * * *", "topic": "mail"}`, sluiceweb.CodeInvalidSchedule, "cron"},
			{"no cron", `{"name": "a", "topic": "mail"}`, sluiceweb.CodeInvalidSchedule, "cron"},
			{"unknown time zone", `{"name": "a", "cron": "@daily", "time_zone": "Mars/Olympus", "topic": "mail"}`, sluiceweb.CodeInvalidSchedule, "time_zone"},
			{"unknown queue", `{"name": "a", "cron": "@daily", "topic": "mail", "queue": "nope"}`, sluiceweb.CodeInvalidSchedule, "queue"},
			{"unknown catch-up", `{"name": "a", "cron": "@daily", "topic": "mail", "catch_up": "all"}`, sluiceweb.CodeInvalidSchedule, "catch_up"},
			{"no name", `{"cron": "@daily", "topic": "mail"}`, sluiceweb.CodeInvalidSchedule, "name"},
			{"long name", `{"name": "` + long + `", "cron": "@daily", "topic": "mail"}`, sluiceweb.CodeInvalidSchedule, "name"},
			{"no topic", `{"name": "a", "cron": "@daily"}`, sluiceweb.CodeInvalidSchedule, "topic"},
			{"priority out of range", `{"name": "a", "cron": "@daily", "topic": "mail", "priority": 40000}`, sluiceweb.CodeInvalidSchedule, "priority"},
			{"negative retries", `{"name": "a", "cron": "@daily", "topic": "mail", "max_retries": -1}`, sluiceweb.CodeInvalidSchedule, "max_retries"},
			{"payload not an argument", `{"name": "a", "cron": "@daily", "topic": "mail", "payload": "a\u0000"}`, sluiceweb.CodeInvalidSchedule, "payload"},
			{"computed member", `{"name": "a", "cron": "@daily", "topic": "mail", "next_run_at": "2030-01-01T00:00:00Z"}`, sluiceweb.CodeInvalidRequest, "next_run_at"},
			{"unknown member", `{"name": "a", "cron": "@daily", "topic": "mail", "disabled": true}`, sluiceweb.CodeInvalidRequest, "disabled"},
			{"ill-typed member", `{"name": "a", "cron": "@daily", "topic": "mail", "enabled": "no"}`, sluiceweb.CodeInvalidRequest, "enabled"},
		} {
			p := e.do("POST", "api/schedules", tc.body).problem(t, http.StatusBadRequest, tc.code)
			require.Equal(t, tc.field, p.Field, tc.name)
		}
		p := e.do("POST", "api/schedules", `{"name": "taken", "cron": "@hourly", "topic": "mail"}`).
			problem(t, http.StatusConflict, sluiceweb.CodeDuplicateSchedule)
		require.Equal(t, "name", p.Field)
		for _, tc := range []struct{ body, code, field string }{
			{`{"name": "other", "cron": "@hourly", "topic": "mail"}`, sluiceweb.CodeInvalidRequest, "name"},
			{`{"cron": "@hourly", "time_zone": "Nowhere/Else", "topic": "mail"}`, sluiceweb.CodeInvalidSchedule, "time_zone"},
			{`{"cron": "every hour", "topic": "mail"}`, sluiceweb.CodeInvalidSchedule, "cron"},
			{`{"cron": "@hourly", "topic": "mail", "queue": "nope"}`, sluiceweb.CodeInvalidSchedule, "queue"},
			{`{"cron": "@hourly", "topic": "mail", "last_job_id": "x"}`, sluiceweb.CodeInvalidRequest, "last_job_id"},
		} {
			p := e.do("PUT", "api/schedules/taken", tc.body).problem(t, http.StatusBadRequest, tc.code)
			require.Equal(t, tc.field, p.Field, tc.body)
		}
		require.Equal(t, []string{"taken"}, e.scheduleNames(), "nothing was written")
		require.Equal(t, before, e.do("GET", "api/schedules/taken", "").schedule(t, http.StatusOK), "nothing was changed")
		e.do("GET", "api/schedules?topic=mail", "").problem(t, http.StatusBadRequest, sluiceweb.CodeInvalidFilter)
	})
}

func TestSchedulesAuthorization(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		p := &policy{}
		e := newEnv(t, db, &sluiceweb.Options{Authorize: p.authorize, AllowedTopics: []string{"mail", "sms"}})
		reader, mailer := []string{"X-User", "reader"}, []string{"X-User", "mailer"}
		e.do("GET", "api/schedules", "").problem(t, http.StatusUnauthorized, sluiceweb.CodeUnauthorized)
		body := `{"name": "m", "cron": "@daily", "topic": "mail"}`
		read := func(name string, topics ...string) sluiceweb.Action {
			return sluiceweb.Action{Kind: "read", Name: name, Topics: topics, Schedule: "m"}
		}
		manage := func(name string, topics ...string) sluiceweb.Action {
			return sluiceweb.Action{Kind: "manage", Name: name, Topics: topics, Schedule: "m"}
		}
		for _, tc := range []struct {
			method, path, body string
			user               []string
			status             int
			want               sluiceweb.Action
		}{
			{"POST", "api/schedules", body, reader, 403, manage("create_schedule", "mail")},
			{"POST", "api/schedules", `{"name": "m", "cron": "@daily", "topic": "sms"}`, mailer, 403, manage("create_schedule", "sms")},
			{"POST", "api/schedules", body, mailer, 201, manage("create_schedule", "mail")},
			{"GET", "api/schedules", "", reader, 200, sluiceweb.Action{Kind: "read", Name: "list_schedules", AllTopics: true}},
			{"GET", "api/schedules/m", "", reader, 200, read("get_schedule", "mail")},
			{"GET", "api/schedules/gone", "", reader, 404, sluiceweb.Action{Kind: "read", Name: "get_schedule", Schedule: "gone"}},
			{"PUT", "api/schedules/m", `{"cron": "@hourly", "topic": "mail"}`, reader, 403, manage("update_schedule", "mail")},
			{"PUT", "api/schedules/m", `{"cron": "@hourly", "topic": "sms"}`, mailer, 403, manage("update_schedule", "mail", "sms")},
			{"PUT", "api/schedules/m", `{"cron": "@hourly", "topic": "mail"}`, mailer, 200, manage("update_schedule", "mail")},
			{"DELETE", "api/schedules/m", "", reader, 403, manage("delete_schedule", "mail")},
			{"DELETE", "api/schedules/m", "", mailer, 200, manage("delete_schedule", "mail")},
		} {
			r := e.do(tc.method, tc.path, tc.body, tc.user...)
			require.Equal(t, tc.status, r.status, "%s %s as %s: %s", tc.method, tc.path, tc.user[1], r.body)
			if tc.status == http.StatusForbidden {
				r.problem(t, http.StatusForbidden, sluiceweb.CodeForbidden)
			}
			if tc.body != "" {
				// A create or an update: the body exactly as sent, and
				// the jobs' payload as it will be stored.
				tc.want.Body, tc.want.Payload = json.RawMessage(tc.body), json.RawMessage(`{}`)
			}
			require.Equal(t, tc.want, p.last(), "%s %s", tc.method, tc.path)
		}
	})
}

func TestSchedulesObeyReadOnlyAndAllowedTopics(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, &sluiceweb.Options{Authorize: sluiceweb.AllowAll, AllowedTopics: []string{"mail"}})
		e.do("POST", "api/schedules", `{"name": "s", "cron": "@daily", "topic": "sms"}`).problem(t, http.StatusForbidden, sluiceweb.CodeForbidden)
		e.do("POST", "api/schedules", `{"name": "m", "cron": "@daily", "topic": "mail"}`).schedule(t, http.StatusCreated)
		e.do("PUT", "api/schedules/m", `{"cron": "@daily", "topic": "sms"}`).problem(t, http.StatusForbidden, sluiceweb.CodeForbidden)
		require.Equal(t, "mail", e.do("GET", "api/schedules/m", "").schedule(t, http.StatusOK).Topic)

		ro := newEnv(t, db, &sluiceweb.Options{Authorize: sluiceweb.AllowAll, ReadOnly: true})
		for _, req := range [][3]string{
			{"POST", "api/schedules", `{"name": "n", "cron": "@daily", "topic": "mail"}`},
			{"PUT", "api/schedules/m", `{"cron": "@hourly", "topic": "mail"}`},
			{"DELETE", "api/schedules/m", ""},
		} {
			ro.do(req[0], req[1], req[2]).problem(t, http.StatusForbidden, sluiceweb.CodeReadOnly)
		}
		require.Equal(t, []string{"m"}, ro.scheduleNames())
		e.do("PUT", "api/schedules/m", `{"cron": "@daily", "topic": "mail"}`, "Sec-Fetch-Site", "cross-site").
			problem(t, http.StatusForbidden, sluiceweb.CodeCrossOrigin)
	})
}
