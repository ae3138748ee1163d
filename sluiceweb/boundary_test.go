package sluiceweb_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluiceweb"
)

// ownMail is an Authorize that lets the user named by the header X-User
// enqueue mail to itself only, judged on the payload the action carries:
// the one stored. It records the payloads it allowed.
type ownMail struct {
	mu      sync.Mutex
	allowed []json.RawMessage
}

func (o *ownMail) authorize(r *http.Request, a sluiceweb.Action) error {
	if a.Kind != sluiceweb.ActionEnqueue {
		return nil
	}
	var p struct {
		To string `json:"to"`
	}
	if err := json.Unmarshal(a.Payload, &p); err != nil || p.To != r.Header.Get("X-User") {
		return errors.New("mail to yourself only")
	}
	o.mu.Lock()
	o.allowed = append(o.allowed, a.Payload)
	o.mu.Unlock()
	return nil
}

// TestWhatIsAuthorizedIsWhatIsStored: a request whose body one reader
// could take for one job and another for a different one is refused
// before Authorize sees it, and Authorize judges the payload as stored.
func TestWhatIsAuthorizedIsWhatIsStored(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		o := &ownMail{}
		e := newEnv(t, db, &sluiceweb.Options{Authorize: o.authorize})
		me := []string{"X-User", "me", "Content-Type", "application/json"}
		for _, tc := range []struct {
			name, body, code, field string
		}{
			{"a member twice by case", `{"topic":"mail","payload":{"to":"me"},"Payload":{"to":"you"}}`,
				sluiceweb.CodeInvalidRequest, "Payload"},
			{"a payload member twice by case", `{"topic":"mail","payload":{"to":"me","To":"you"}}`,
				sluiceweb.CodeInvalidPayload, "payload.To"},
			{"a payload member twice", `{"topic":"mail","payload":{"to":"me","to":"you"}}`,
				sluiceweb.CodeInvalidPayload, "payload.to"},
			{"a member twice by the long s", `{"topic":"mail","payload":{"to":"me"},"tags":["a"],"tagſ":["b"]}`,
				sluiceweb.CodeInvalidRequest, "tagſ"},
			{"a member twice by an escape", `{"topic":"mail","payload":{"to":"me"},"\u0074opic":"sms"}`,
				sluiceweb.CodeInvalidRequest, "topic"},
			{"a nested member twice", `{"topic":"mail","payload":{"to":"me"},"metadata":{"a":{"b":1,"B":2}}}`,
				sluiceweb.CodeInvalidRequest, "metadata.a.B"},
			{"a request member by case only", `{"Topic":"mail","payload":{"to":"me"}}`,
				sluiceweb.CodeInvalidRequest, "Topic"},
			{"a payload field by case only", `{"topic":"mail","payload":{"TO":"me"}}`,
				sluiceweb.CodeInvalidPayload, "payload"},
			{"more after the object", `{"topic":"mail","payload":{"to":"me"}}` + strings.Repeat(" ", 200000) + `{"topic":"mail"}`,
				sluiceweb.CodeInvalidRequest, ""},
			{"a cut body", `{"topic":"mail","payload":{"to":"me"`, sluiceweb.CodeInvalidRequest, ""},
		} {
			p := e.do("POST", "api/jobs", tc.body, me...).problem(t, http.StatusBadRequest, tc.code)
			require.Equal(t, tc.field, p.Field, "%s: %s", tc.name, p.Detail)
		}
		require.Zero(t, e.count(), "nothing was stored")
		// Only the payload with a field by case only reached Authorize
		// (which decoded it with encoding/json, as a worker would, and
		// allowed it); the client's check against the worker's type
		// refused it after.
		require.Equal(t, []json.RawMessage{json.RawMessage(`{"TO":"me"}`)}, o.allowed)
		o.allowed = nil

		// The payload Authorize judged is the one stored (as sent to the
		// database: Postgres's jsonb writes the same value its own way),
		// and the one a worker decodes.
		var res enqueued
		e.do("POST", "api/jobs", `{"topic": "mail", "payload": { "to" : "me" }}`, me...).json(t, http.StatusCreated, &res)
		require.Equal(t, []json.RawMessage{json.RawMessage(`{"to":"me"}`)}, o.allowed)
		require.JSONEq(t, string(o.allowed[0]), string(e.get(res.Job.ID).Payload))
		e.do("POST", "api/jobs", `{"topic": "mail", "payload": {"to": "you"}}`, me...).problem(t, http.StatusForbidden, sluiceweb.CodeForbidden)
		require.Equal(t, 1, e.count())
	})
}

// TestBadBytesAreRefusedNotReplaced: a request body that is not valid
// UTF-8, in any member of any route that takes a body, is refused with
// nothing stored, rather than stored with U+FFFD in place of the bytes.
func TestBadBytesAreRefusedNotReplaced(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		job := e.enqueue(nil)
		for _, tc := range []struct {
			method, path, body, code, field string
		}{
			{"POST", "api/jobs", "{\"topic\":\"mail\",\"unique_key\":\"q\xfe\"}", sluiceweb.CodeInvalidRequest, "unique_key"},
			{"POST", "api/jobs", "{\"topic\":\"mail\",\"unique_key\":\"q\xff\"}", sluiceweb.CodeInvalidRequest, "unique_key"},
			{"POST", "api/jobs", "{\"topic\":\"mail\",\"tags\":[\"ok\",\"\xff\"]}", sluiceweb.CodeInvalidRequest, "tags[1]"},
			{"POST", "api/jobs", "{\"topic\":\"mail\",\"metadata\":{\"k\":\"\xc3\"}}", sluiceweb.CodeInvalidRequest, "metadata.k"},
			{"POST", "api/jobs", "{\"topic\":\"mail\",\"metadata\":{\"\xc3\":\"v\"}}", sluiceweb.CodeInvalidRequest, "metadata"},
			{"POST", "api/jobs", "{\"topic\":\"mail\",\"payload\":{\"to\":\"\xff\"}}", sluiceweb.CodeInvalidPayload, "payload.to"},
			{"POST", "api/jobs", "{\"topic\":\"m\xffail\"}", sluiceweb.CodeInvalidRequest, "topic"},
			{"POST", "api/jobs", "{\"topic\":\"mail\",\"queue\":\"\xff\"}", sluiceweb.CodeInvalidRequest, "queue"},
			{"POST", "api/jobs", `{"topic":"mail","unique_key":"q\udfff"}`, sluiceweb.CodeInvalidRequest, "unique_key"},
			{"POST", "api/jobs", `{"topic":"mail","tags":["\ud800"]}`, sluiceweb.CodeInvalidRequest, "tags[0]"},
			{"POST", "api/jobs/cancel", "{\"topics\":[\"\xff\"]}", sluiceweb.CodeInvalidRequest, "topics[0]"},
			{"POST", "api/jobs/delete", "{\"metadata\":{\"k\":\"\xff\"}}", sluiceweb.CodeInvalidRequest, "metadata.k"},
			{"POST", "api/jobs/requeue", "{\"unique_key\":\"\xff\"}", sluiceweb.CodeInvalidRequest, "unique_key"},
			{"POST", "api/jobs/retry", `{"topics":["mail"],"Topics":["sms"]}`, sluiceweb.CodeInvalidRequest, "Topics"},
			{"POST", "api/schedules", "{\"name\":\"s\xff\",\"cron\":\"@daily\",\"topic\":\"mail\"}", sluiceweb.CodeInvalidRequest, "name"},
			{"POST", "api/schedules", "{\"name\":\"s\",\"cron\":\"@daily\",\"topic\":\"mail\",\"payload\":{\"to\":\"\xff\"}}",
				sluiceweb.CodeInvalidPayload, "payload.to"},
			{"POST", "api/schedules", `{"name":"s","cron":"@daily","topic":"mail","payload":{"to":"a","tO":"b"}}`,
				sluiceweb.CodeInvalidPayload, "payload.tO"},
			{"PUT", "api/schedules/s", "{\"cron\":\"@daily\",\"topic\":\"mail\",\"time_zone\":\"\xff\"}", sluiceweb.CodeInvalidRequest, "time_zone"},
		} {
			p := e.do(tc.method, tc.path, tc.body, "Content-Type", "application/json").problem(t, http.StatusBadRequest, tc.code)
			require.Equal(t, tc.field, p.Field, "%s %s %q: %s", tc.method, tc.path, tc.body, p.Detail)
		}
		require.Equal(t, 1, e.count(), "no job was stored")
		require.Equal(t, "pending", string(e.get(job).Status), "no job was changed")
		require.Empty(t, e.scheduleNames(), "no schedule was stored")
	})
}

// TestBodiesMustBeSentAsJSON: a body sent as anything but application/json
// is refused with 415 on every route that takes one.
func TestBodiesMustBeSentAsJSON(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		routes := [][3]string{
			{"POST", "api/jobs", `{"topic": "mail"}`},
			{"POST", "api/jobs/enqueue", `{"topic": "mail"}`},
			{"POST", "api/jobs/cancel", `{"topics": ["mail"]}`},
			{"POST", "api/schedules", `{"name": "s", "cron": "@daily", "topic": "mail"}`},
			{"PUT", "api/schedules/s", `{"cron": "@daily", "topic": "mail"}`},
		}
		for _, route := range routes {
			for _, header := range [][]string{
				{"Content-Type", "text/plain"},
				{"Content-Type", "application/x-www-form-urlencoded"},
				{"Content-Type", "application/jsonx"},
				{"Content-Type", "application/json; charset=latin1"},
				{"Content-Type", ""},
			} {
				e.do(route[0], route[1], route[2], header...).problem(t, http.StatusUnsupportedMediaType, sluiceweb.CodeUnsupportedMediaType)
			}
			// Two Content-Type headers: which one counts is not for the
			// handler to guess.
			req, err := http.NewRequestWithContext(t.Context(), route[0], e.srv.URL+"/sluice/"+route[1], strings.NewReader(route[2]))
			require.NoError(t, err)
			req.Header.Add("Content-Type", "application/json")
			req.Header.Add("Content-Type", "text/plain")
			res, err := e.srv.Client().Do(req)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, res.Body)
			require.NoError(t, res.Body.Close())
			require.Equal(t, http.StatusUnsupportedMediaType, res.StatusCode, "%s %s", route[0], route[1])
		}
		require.Zero(t, e.count())
		require.Empty(t, e.scheduleNames())
		// Parameters are allowed, the charset UTF-8 in any case.
		require.Equal(t, http.StatusCreated, e.do("POST", "api/jobs", `{"topic": "mail"}`, "Content-Type", "application/json; charset=UTF-8").status)
		require.Equal(t, http.StatusCreated, e.do("POST", "api/jobs", `{"topic": "mail"}`, "Content-Type", "Application/JSON").status)
	})
}

// count returns how many jobs the database holds.
func (e *env) count() int {
	e.t.Helper()
	var list struct {
		Total int `json:"total"`
	}
	e.do("GET", "api/jobs?limit=1", "").json(e.t, http.StatusOK, &list)
	return list.Total
}

// get returns a job as the client reads it.
func (e *env) get(id string) *sluice.JobRow {
	e.t.Helper()
	row, err := e.client.Get(e.t.Context(), id)
	require.NoError(e.t, err)
	return row
}
