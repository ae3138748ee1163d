package sluiceweb_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/sluiceweb"
)

func TestNewRefusesOptionsWithoutAuthorization(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		for field, opts := range map[string]*sluiceweb.Options{
			"Authorize":         nil,
			"Authorize ":        {ReadOnly: true},
			"TrustedOrigins[1]": {Authorize: sluiceweb.AllowAll, TrustedOrigins: []string{"https://a.example", "not an origin"}},
			"AllowedTopics[0]":  {Authorize: sluiceweb.AllowAll, AllowedTopics: []string{""}},
		} {
			h, _, err := db.serve(t, handlerConfig(), opts)
			require.Nil(t, h)
			require.ErrorIs(t, err, sluiceweb.ErrInvalidOptions, field)
			var oe *sluiceweb.OptionsError
			require.ErrorAs(t, err, &oe)
			require.Equal(t, field[:len(oe.Field)], oe.Field)
		}
	})
	_, err := sluiceweb.New[any](nil, &sluiceweb.Options{Authorize: sluiceweb.AllowAll})
	require.ErrorIs(t, err, sluiceweb.ErrInvalidOptions)
}

func TestReadOnlyRefusesChanges(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, &sluiceweb.Options{Authorize: sluiceweb.AllowAll, ReadOnly: true})
		id := e.enqueue(nil)
		for _, req := range [][3]string{
			{"POST", "api/jobs", `{"topic": "mail"}`},
			{"POST", "api/jobs/enqueue", `{"topic": "mail"}`},
			{"POST", "api/jobs/" + id + "/cancel", ""},
			{"POST", "api/jobs/" + id + "/requeue", ""},
			{"POST", "api/jobs/" + id + "/retry", ""},
			{"DELETE", "api/jobs/" + id, ""},
			{"POST", "api/jobs/cancel", `{"topics": ["mail"]}`},
			{"POST", "api/jobs/delete", `{"topics": ["mail"]}`},
			{"POST", "api/queues/default/pause", ""},
			{"POST", "api/queues/default/resume", ""},
			{"PUT", "api/limits/queue/default/keys", `{"max_running": 1}`},
			{"PUT", "api/limits/topic/mail/keys", `{"max_running": 1}`},
			{"PUT", "api/limits/topic/mail", `{"max_running": 1}`},
		} {
			e.do(req[0], req[1], req[2]).problem(t, http.StatusForbidden, sluiceweb.CodeReadOnly)
		}
		require.Equal(t, http.StatusOK, e.do("GET", "api/jobs/"+id, "").status)
		require.Equal(t, "pending", jobOf(t, e.do("GET", "api/jobs/"+id+"/explain", "")).Status)
		require.Equal(t, http.StatusOK, e.do("GET", "api/limits", "").status)
		require.Equal(t, http.StatusOK, e.do("GET", "api/queues/default/keys", "").status)
	})
}

func TestAllowedTopicsLimitEnqueues(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, &sluiceweb.Options{Authorize: sluiceweb.AllowAll, AllowedTopics: []string{"mail"}})
		e.do("POST", "api/jobs", `{"topic": "sms"}`).problem(t, http.StatusForbidden, sluiceweb.CodeForbidden)
		require.Equal(t, http.StatusCreated, e.do("POST", "api/jobs", `{"topic": "mail"}`).status)
	})
}

// policy is an Authorize function over a header X-User: "reader" may read,
// "mailer" may read, enqueue and manage mail jobs only; no header is
// unauthorized. It records the actions it was asked about.
type policy struct {
	mu      sync.Mutex
	actions []sluiceweb.Action
}

func (p *policy) authorize(r *http.Request, a sluiceweb.Action) error {
	p.mu.Lock()
	p.actions = append(p.actions, a)
	p.mu.Unlock()
	switch user := r.Header.Get("X-User"); {
	case user == "":
		return &sluiceweb.UnauthorizedError{Challenge: `Basic realm="sluice"`}
	case a.Kind == sluiceweb.ActionRead:
		return nil
	case user != "mailer":
		return errors.New("readers only read")
	case a.AllTopics || slices.ContainsFunc(a.Topics, func(t string) bool { return t != "mail" }):
		return errors.New("mailers act on mail jobs only")
	}
	return nil
}

// last returns the last action asked about, and forgets them all.
func (p *policy) last() sluiceweb.Action {
	p.mu.Lock()
	defer p.mu.Unlock()
	a := p.actions[len(p.actions)-1]
	p.actions = nil
	return a
}

func TestAuthorizeDecidesPerActionAndTopic(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		p := &policy{}
		e := newEnv(t, db, &sluiceweb.Options{Authorize: p.authorize})
		id := e.enqueue(nil)
		reader, mailer := []string{"X-User", "reader"}, []string{"X-User", "mailer"}

		r := e.do("GET", "api/jobs", "")
		r.problem(t, http.StatusUnauthorized, sluiceweb.CodeUnauthorized)
		require.Equal(t, `Basic realm="sluice"`, r.header.Get("WWW-Authenticate"))
		require.Equal(t, http.StatusOK, e.do("GET", "api/openapi.json", "").status, "the document needs no authorization")

		for _, tc := range []struct {
			method, path, body string
			user               []string
			status             int
			want               sluiceweb.Action
		}{
			{"GET", "api/jobs", "", reader, 200, sluiceweb.Action{Kind: "read", Name: "list", AllTopics: true}},
			{"GET", "api/jobs?topics=mail,sms", "", reader, 200, sluiceweb.Action{Kind: "read", Name: "list", Topics: []string{"mail", "sms"}}},
			{"GET", "api/jobs/" + id, "", reader, 200, sluiceweb.Action{Kind: "read", Name: "get", Topics: []string{"mail"}, JobID: id}},
			{"GET", "api/jobs/" + missingID, "", reader, 404, sluiceweb.Action{Kind: "read", Name: "get", JobID: missingID}},
			{"GET", "api/jobs/" + id + "/explain", "", reader, 200, sluiceweb.Action{Kind: "read", Name: "explain", Topics: []string{"mail"}, JobID: id}},
			{"GET", "api/jobs/stats?topics=mail", "", reader, 200, sluiceweb.Action{Kind: "read", Name: "stats", Topics: []string{"mail"}}},
			{"GET", "api/queues", "", reader, 200, sluiceweb.Action{Kind: "read", Name: "queues", AllTopics: true}},
			{"GET", "api/clients", "", reader, 200, sluiceweb.Action{Kind: "read", Name: "clients", AllTopics: true}},
			{"POST", "api/jobs", `{"topic": "mail"}`, reader, 403, sluiceweb.Action{Kind: "enqueue", Name: "enqueue", Topics: []string{"mail"}, Payload: json.RawMessage(`{}`)}},
			{"POST", "api/jobs", `{"topic": "mail", "payload": {"to": "a@b.c"}}`, mailer, 201,
				sluiceweb.Action{Kind: "enqueue", Name: "enqueue", Topics: []string{"mail"}, Payload: json.RawMessage(`{"to":"a@b.c"}`)}},
			{"POST", "api/jobs/" + id + "/cancel", "", reader, 403, sluiceweb.Action{Kind: "manage", Name: "cancel", Topics: []string{"mail"}, JobID: id}},
			{"POST", "api/jobs/" + id + "/cancel", "", mailer, 200, sluiceweb.Action{Kind: "manage", Name: "cancel", Topics: []string{"mail"}, JobID: id}},
			{"POST", "api/jobs/requeue", `{"statuses": ["cancelled"]}`, mailer, 403, sluiceweb.Action{Kind: "manage", Name: "requeue", AllTopics: true}},
			{"POST", "api/jobs/requeue", `{"topics": ["mail"]}`, mailer, 200, sluiceweb.Action{Kind: "manage", Name: "requeue", Topics: []string{"mail"}}},
			{"DELETE", "api/jobs/" + id, "", mailer, 200, sluiceweb.Action{Kind: "manage", Name: "delete", Topics: []string{"mail"}, JobID: id}},
			{"GET", "api/limits", "", reader, 200, sluiceweb.Action{Kind: "read", Name: "limits", AllTopics: true}},
			{"GET", "api/queues/default/keys", "", reader, 200, sluiceweb.Action{Kind: "read", Name: "key_counts", AllTopics: true, Queue: "default"}},
			{"PUT", "api/limits/queue/default/keys", `{"max_running": 1}`, mailer, 403,
				sluiceweb.Action{Kind: "manage", Name: "set_key_limits", AllTopics: true, Queue: "default"}},
			{"PUT", "api/limits/topic/sms/keys", `{"max_running": 1}`, mailer, 403,
				sluiceweb.Action{Kind: "manage", Name: "set_key_limits", Topics: []string{"sms"}}},
			{"PUT", "api/limits/topic/mail/keys", `{"max_running": 1}`, mailer, 200,
				sluiceweb.Action{Kind: "manage", Name: "set_key_limits", Topics: []string{"mail"}}},
			{"PUT", "api/limits/topic/mail", `{"max_running": 1}`, reader, 403,
				sluiceweb.Action{Kind: "manage", Name: "set_topic_limits", Topics: []string{"mail"}}},
			{"PUT", "api/limits/topic/mail", `{"max_running": 1}`, mailer, 200,
				sluiceweb.Action{Kind: "manage", Name: "set_topic_limits", Topics: []string{"mail"}}},
		} {
			r := e.do(tc.method, tc.path, tc.body, tc.user...)
			require.Equal(t, tc.status, r.status, "%s %s as %s: %s", tc.method, tc.path, tc.user[1], r.body)
			if tc.status == http.StatusForbidden {
				r.problem(t, http.StatusForbidden, sluiceweb.CodeForbidden)
			}
			if tc.body != "" {
				tc.want.Body = json.RawMessage(tc.body) // the body exactly as sent
			}
			require.Equal(t, tc.want, p.last(), "%s %s", tc.method, tc.path)
		}
		e.events("api/events?topics=mail", "", reader...)
		require.Equal(t, sluiceweb.Action{Kind: "read", Name: "events", Topics: []string{"mail"}}, p.last())
	})
}

const missingID = "0190f5d2-0000-7000-8000-000000000001"

func TestCrossOriginRequestsAreRefused(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, &sluiceweb.Options{Authorize: sluiceweb.AllowAll, TrustedOrigins: []string{"https://admin.example.com"}})
		id := e.enqueue(nil)
		body := `{"topic": "mail"}`
		e.do("POST", "api/jobs", body, "Sec-Fetch-Site", "cross-site").problem(t, http.StatusForbidden, sluiceweb.CodeCrossOrigin)
		e.do("POST", "api/jobs", body, "Origin", "https://evil.example").problem(t, http.StatusForbidden, sluiceweb.CodeCrossOrigin)
		e.do("DELETE", "api/jobs/"+id, "", "Sec-Fetch-Site", "same-site").problem(t, http.StatusForbidden, sluiceweb.CodeCrossOrigin)
		require.Equal(t, http.StatusOK, e.do("GET", "api/jobs/"+id, "", "Sec-Fetch-Site", "cross-site").status, "reads are safe")
		require.Equal(t, http.StatusCreated, e.do("POST", "api/jobs", body, "Sec-Fetch-Site", "same-origin").status)
		require.Equal(t, http.StatusCreated, e.do("POST", "api/jobs", body, "Sec-Fetch-Site", "cross-site",
			"Origin", "https://admin.example.com").status, "a trusted origin")
		require.Equal(t, http.StatusCreated, e.do("POST", "api/jobs", body).status, "no browser")
	})
}
