package sluiceweb_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluiceweb"
)

// TestKeysOnJobs enqueues jobs with keys and a sequence, and selects them
// by key in lists, bulk actions and the queue's key counts.
func TestKeysOnJobs(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		var acme enqueued
		e.do("POST", "api/jobs", `{"topic": "mail", "key": "acme", "sequence": "hold", "delay": "1h"}`).json(t, http.StatusCreated, &acme)
		require.Equal(t, "acme", acme.Job.Key)
		require.Equal(t, "hold", acme.Job.Sequence)
		e.do("POST", "api/jobs", `{"topic": "mail", "key": "acme", "delay": "1h"}`).json(t, http.StatusCreated, &enqueued{})
		var globex enqueued
		e.do("POST", "api/jobs", `{"topic": "mail", "key": "globex", "queue": "bulk"}`).json(t, http.StatusCreated, &globex)
		require.Empty(t, globex.Job.Sequence)
		e.enqueue(nil) // no key

		var got jobJSON
		e.do("GET", "api/jobs/"+acme.Job.ID, "").json(t, http.StatusOK, &got)
		require.Equal(t, "acme", got.Key)
		require.Equal(t, "hold", got.Sequence)

		var list struct {
			Items []jobJSON `json:"items"`
			Total int       `json:"total"`
		}
		e.do("GET", "api/jobs?keys=acme", "").json(t, http.StatusOK, &list)
		require.Equal(t, 2, list.Total)
		e.do("GET", "api/jobs?keys=globex,nope&keys=acme", "").json(t, http.StatusOK, &list)
		require.Equal(t, 3, list.Total)

		var counts struct {
			Items []sluice.KeyCount `json:"items"`
		}
		e.do("GET", "api/queues/default/keys", "").json(t, http.StatusOK, &counts)
		require.Equal(t, []sluice.KeyCount{{Key: "acme", Pending: 2}}, counts.Items)
		e.do("GET", "api/queues/bulk/keys?limit=1", "").json(t, http.StatusOK, &counts)
		require.Equal(t, []sluice.KeyCount{{Key: "globex", Pending: 1}}, counts.Items)

		var bulk struct {
			Count int `json:"count"`
		}
		e.do("POST", "api/jobs/cancel", `{"keys": ["globex"]}`).json(t, http.StatusOK, &bulk)
		require.Equal(t, 1, bulk.Count)
		e.do("GET", "api/queues/bulk/keys", "").json(t, http.StatusOK, &counts)
		require.Empty(t, counts.Items, "a cancelled job is neither pending nor processing")
		require.JSONEq(t, `{"items": []}`, string(e.do("GET", "api/queues/nope/keys", "").body))

		e.do("GET", "api/queues/default/keys?limit=-1", "").problem(t, http.StatusBadRequest, sluiceweb.CodeInvalidFilter)
		e.do("GET", "api/queues/default/keys?limit=x", "").problem(t, http.StatusBadRequest, sluiceweb.CodeInvalidFilter)
		e.do("GET", "api/queues/default/keys?key=acme", "").problem(t, http.StatusBadRequest, sluiceweb.CodeInvalidFilter)
	})
}

// TestExplainAHeldSequence fails the first job of a sequence for good:
// the next one is held behind it, and Explain names it.
func TestExplainAHeldSequence(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		cfg := handlerConfig()
		cfg.PollInterval = 50 * time.Millisecond
		cfg.Workers = mailWorkers(func(_ context.Context, job *sluice.Job[mailArgs]) error {
			if job.Args.To == "fail" {
				return errors.New("mailbox full")
			}
			return nil
		})
		e := newEnvWith(t, db, cfg, nil)
		var first, next enqueued
		e.do("POST", "api/jobs", `{"topic": "mail", "payload": {"to": "fail"}, "key": "acme", "sequence": "hold", "max_retries": 0}`).
			json(t, http.StatusCreated, &first)
		e.do("POST", "api/jobs", `{"topic": "mail", "payload": {"to": "ok"}, "key": "acme", "sequence": "hold"}`).
			json(t, http.StatusCreated, &next)
		require.NoError(t, e.client.Start(t.Context()))
		t.Cleanup(func() { require.NoError(t, e.client.Stop(context.Background())) })
		require.Eventually(t, func() bool {
			row, err := e.client.Get(t.Context(), first.Job.ID)
			return err == nil && row.Status == sluice.StatusFailed
		}, 10*time.Second, 20*time.Millisecond)

		var ex struct {
			Job    jobJSON `json:"job"`
			Reason string  `json:"reason"`
			Text   string  `json:"text"`
			Key    string  `json:"key"`
			Ahead  string  `json:"ahead"`
		}
		e.do("GET", "api/jobs/"+next.Job.ID+"/explain", "").json(t, http.StatusOK, &ex)
		require.Equal(t, "pending", ex.Job.Status, "held behind the failed job")
		require.Equal(t, "sequence", ex.Reason)
		require.Equal(t, "acme", ex.Key)
		require.Equal(t, first.Job.ID, ex.Ahead)
		require.NotEmpty(t, ex.Text)
	})
}

// TestLimits sets the key limits of a queue and a topic and a topic's own
// limits, and reads them back, as stored.
func TestLimits(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		l := limitsOf(t, e.do("PUT", "api/limits/queue/default/keys", `{"max_running": 2, "rate_limit": 10, "rate_period": "1m",
			"sequence": "hold", "fair": true,
			"keys": [{"key": "globex", "rate_limit": 1, "rate_period": "1s"}, {"key": "acme", "max_running": 5, "weight": 3}]}`))
		require.Equal(t, "queue", l.Kind)
		require.Equal(t, "default", l.Name)
		require.False(t, l.UpdatedAt.IsZero())
		require.Equal(t, sluiceweb.KeyLimitsJSON{MaxRunning: 2, RateLimit: 10, RatePeriod: "1m", Sequence: "hold", Fair: true,
			Keys: []sluiceweb.KeyLimitJSON{{Key: "acme", MaxRunning: 5, Weight: 3}, {Key: "globex", RateLimit: 1, RatePeriod: "1s"}}}, l.KeyLimits)

		l = limitsOf(t, e.do("PUT", "api/limits/topic/mail", `{"max_running": 4, "rate_limit": 100, "rate_period": "1h30m"}`))
		require.Equal(t, sluiceweb.LimitsResponse{Kind: "topic", Name: "mail", MaxRunning: 4, RateLimit: 100, RatePeriod: "1h30m",
			UpdatedAt: l.UpdatedAt}, l)
		l = limitsOf(t, e.do("PUT", "api/limits/topic/mail/keys", `{"max_running": 1}`))
		require.Equal(t, 4, l.MaxRunning, "the topic's own limits are kept")
		require.Equal(t, 1, l.KeyLimits.MaxRunning)

		stored, err := e.client.StoredLimits(t.Context())
		require.NoError(t, err)
		require.Len(t, stored, 2)
		q := stored[0]
		require.Equal(t, sluice.QueueScope("default"), q.Scope)
		require.Equal(t, 2, q.KeyMaxRunning)
		require.Equal(t, time.Minute, q.KeyRatePeriod)
		require.Equal(t, sluice.SequenceHold, q.Sequence)
		require.True(t, q.Fair)
		require.Equal(t, []driver.KeyLimit{{Key: "acme", MaxRunning: 5, Weight: 3}, {Key: "globex", RateLimit: 1, RatePeriod: time.Second}}, q.Keys)
		require.Equal(t, sluice.TopicScope("mail"), stored[1].Scope)
		require.Equal(t, 90*time.Minute, stored[1].RatePeriod)

		var all struct {
			Items []sluiceweb.LimitsResponse `json:"items"`
		}
		e.do("GET", "api/limits", "").json(t, http.StatusOK, &all)
		require.Len(t, all.Items, 2)
		require.Equal(t, "default", all.Items[0].Name)
		require.Equal(t, "acme", all.Items[0].KeyLimits.Keys[0].Key)
		require.Equal(t, "mail", all.Items[1].Name)

		// Empty limits remove them.
		require.Equal(t, sluiceweb.KeyLimitsJSON{}, limitsOf(t, e.do("PUT", "api/limits/queue/default/keys", `{}`)).KeyLimits)
		all.Items = nil
		e.do("GET", "api/limits", "").json(t, http.StatusOK, &all)
		require.Len(t, all.Items, 1)
		require.Equal(t, "topic", all.Items[0].Kind)
		e.do("GET", "api/limits?x=1", "").problem(t, http.StatusBadRequest, sluiceweb.CodeInvalidFilter)
	})
}

// TestLimitsRefuseBadInputAndWriteNothing sends limits that cannot be
// stored: each is refused with the member at fault, and nothing changes.
func TestLimitsRefuseBadInputAndWriteNothing(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		e.do("PUT", "api/limits/queue/default/keys", `{"max_running": 1}`).json(t, http.StatusOK, &sluiceweb.LimitsResponse{})
		before, err := e.client.StoredLimits(t.Context())
		require.NoError(t, err)
		const keys, topic = "api/limits/queue/default/keys", "api/limits/topic/mail"
		for _, tc := range []struct {
			path, body, field string
		}{
			{keys, `{"max_running": -1}`, "max_running"},
			{keys, `{"rate_limit": 5}`, "rate_period"},
			{keys, `{"rate_period": "1m"}`, "rate_period"},
			{keys, `{"rate_limit": 1, "rate_period": "soon"}`, "rate_period"},
			{keys, `{"sequence": "later"}`, "sequence"},
			{keys, `{"Fair": true}`, "Fair"},
			{keys, `{"fair": "yes"}`, "fair"},
			{keys, `{"keys": {"acme": {}}}`, "keys"},
			{keys, `{"keys": [5]}`, "keys[0]"},
			{keys, `{"keys": [{"key": "a", "Max_Running": 1}]}`, "keys[0].Max_Running"},
			{keys, `{"keys": [{"key": "a", "max_running": "3"}]}`, "keys[0].max_running"},
			{keys, `{"keys": [{"max_running": 1}]}`, "keys[0].key"},
			{keys, `{"keys": [{"key": "a"}, {"key": "a"}]}`, "keys[1].key"},
			{keys, `{"keys": [{"key": ""}]}`, "keys[0].key"},
			{keys, `{"keys": [{"key": "a\u0000"}]}`, "keys[0].key"},
			{keys, `{"keys": [{"key": "b"}, {"key": "a", "weight": 2000}]}`, "keys[1].weight"},
			{keys, `{"keys": [{"key": "a", "rate_limit": 3}]}`, "keys[0].rate_period"},
			{"api/limits/topic/mail/keys", `{"fair": true}`, "fair"},
			{"api/limits/nope/x/keys", `{}`, "kind"},
			{"api/limits/queue/no%20spaces/keys", `{"max_running": 1}`, "name"},
			{"api/limits/topic/a%00b", `{"max_running": 1}`, "name"},
			{topic, `{"max_running": -2}`, "max_running"},
			{topic, `{"rate_limit": 1, "rate_period": "-1s"}`, "rate_period"},
			{topic, `{"sequence": "hold"}`, "sequence"},
		} {
			p := e.do("PUT", tc.path, tc.body).problem(t, http.StatusBadRequest, sluiceweb.CodeInvalidRequest)
			require.Equal(t, tc.field, p.Field, "%s %s", tc.path, tc.body)
		}
		e.do("PUT", keys, `{}`, "Content-Type", "text/plain").problem(t, http.StatusUnsupportedMediaType, sluiceweb.CodeUnsupportedMediaType)
		after, err := e.client.StoredLimits(t.Context())
		require.NoError(t, err)
		require.Equal(t, before, after, "nothing was written")
	})
}

// limitsOf decodes an answer of 200 with a scope's limits.
func limitsOf(t *testing.T, r *response) sluiceweb.LimitsResponse {
	t.Helper()
	var l sluiceweb.LimitsResponse
	r.json(t, http.StatusOK, &l)
	return l
}
