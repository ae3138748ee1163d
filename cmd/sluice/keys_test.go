package main_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluiceweb"
)

// enqueuedJSON is enqueue's --json output.
type enqueuedJSON struct {
	Job sluice.JobRow `json:"job"`
}

// TestKeys enqueues jobs with keys, lists them by key, counts a queue's
// keys and sets the limits of a queue's and a topic's keys.
func TestKeys(t *testing.T) {
	t.Parallel()
	eachDB(t, true, func(t *testing.T, d *db) {
		ctx := t.Context()
		out := d.run(t, "enqueue", "mail", "--key", "acme", "--sequence", "hold", "--run-at", "1h").ok(t)
		require.Contains(t, out, "key acme in sequence (hold)")
		acme := decode[enqueuedJSON](t, d.run(t, "enqueue", "mail", "--key", "acme", "--run-at", "1h", "--json").ok(t))
		require.Equal(t, "acme", acme.Job.Key)
		d.run(t, "enqueue", "mail", "--key", "globex", "--run-at", "1h").ok(t)
		d.run(t, "enqueue", "mail", "--run-at", "1h").ok(t)

		out = d.run(t, "list", "--key", "acme").ok(t)
		require.Contains(t, out, "KEY")
		require.Contains(t, out, "2 of 2 jobs")
		list := decode[struct {
			Total int `json:"total"`
		}](t, d.run(t, "list", "--key", "acme,globex", "--json").ok(t))
		require.Equal(t, 3, list.Total)
		require.Contains(t, d.run(t, "get", acme.Job.ID).ok(t), "acme")

		out = d.run(t, "queue", "keys", "default").ok(t)
		require.Regexp(t, `acme\s+2\s+0\s+-\s+-\s+-`, out)
		require.Regexp(t, `globex\s+1\s+0`, out)

		out = d.run(t, "queue", "key-limit", "default", "--max-running", "2", "--rate", "10", "--per", "1m", "--sequence", "hold",
			"--fair", "--key", "acme=5:100/1m:3", "--key", "globex=1", "--key", "initech=:2").ok(t)
		require.Contains(t, out, `queue default: each key at most 2 running at once, at most 10 started per 1m; `+
			`keyed jobs in sequence (hold); fair between keys; key "acme" at most 5 running at once, at most 100 started per 1m, weight 3; `+
			`key "globex" at most 1 running at once; key "initech" weight 2`)
		stored, err := d.lib.StoredLimits(ctx)
		require.NoError(t, err)
		require.Len(t, stored, 1)
		require.Equal(t, &sluice.Limits{Scope: sluice.QueueScope("default"), KeyMaxRunning: 2, KeyRateLimit: 10, KeyRatePeriod: time.Minute,
			Sequence: sluice.SequenceHold, Fair: true, Keys: []driver.KeyLimit{{Key: "acme", MaxRunning: 5, RateLimit: 100, RatePeriod: time.Minute, Weight: 3},
				{Key: "globex", MaxRunning: 1}, {Key: "initech", Weight: 2}}, UpdatedAt: stored[0].UpdatedAt}, stored[0])

		out = d.run(t, "queue", "keys", "default").ok(t)
		require.Contains(t, out, "queue default: each key at most 2 running at once")
		require.Regexp(t, `acme\s+2\s+0\s+5\s+100 per 1m\s+3`, out)
		require.Regexp(t, `globex\s+1\s+0\s+1\s+10 per 1m\s+-`, out)
		require.Regexp(t, `initech\s+0\s+0\s+2\s+10 per 1m\s+2`, out, "a key with limits and no jobs")
		keys := decode[struct {
			Items  []sluice.KeyCount         `json:"items"`
			Limits *sluiceweb.LimitsResponse `json:"limits"`
		}](t, d.run(t, "queue", "keys", "default", "--limit", "1", "--json").ok(t))
		require.Equal(t, []sluice.KeyCount{{Key: "acme", Pending: 2}}, keys.Items)
		require.Equal(t, "1m", keys.Limits.KeyLimits.RatePeriod)

		// What is not given is kept; KEY=0 removes a key's own limits.
		lim := decode[sluiceweb.LimitsResponse](t, d.run(t, "queue", "key-limit", "default", "--key", "globex=0", "--fair=false", "--json").ok(t))
		require.Equal(t, 2, lim.KeyLimits.MaxRunning)
		require.False(t, lim.KeyLimits.Fair)
		require.Len(t, lim.KeyLimits.Keys, 2)
		require.Regexp(t, `default\s+running\s+-\s+-\s+each key .*; 2 keys with limits of their own`, d.run(t, "queue", "list").ok(t))
		ql := decode[struct {
			Items []struct {
				Queue     string                   `json:"queue"`
				KeyLimits *sluiceweb.KeyLimitsJSON `json:"key_limits"`
			} `json:"items"`
		}](t, d.run(t, "queue", "list", "--json").ok(t))
		require.Len(t, ql.Items, 1)
		require.Equal(t, "hold", ql.Items[0].KeyLimits.Sequence)

		// A topic's own limits and its keys'.
		require.Contains(t, d.run(t, "topic", "list").ok(t), "no topic is limited")
		require.Contains(t, d.run(t, "topic", "limit", "mail", "--max-running", "4").ok(t), "topic mail: at most 4 running at once")
		out = d.run(t, "topic", "key-limit", "mail", "--rate", "1", "--per", "1s", "--sequence", "continue").ok(t)
		require.Contains(t, out, "topic mail: at most 4 running at once; each key at most 1 started per 1s; keyed jobs in sequence (continue)")
		tl := decode[struct {
			Items []sluiceweb.LimitsResponse `json:"items"`
		}](t, d.run(t, "topic", "list", "--json").ok(t))
		require.Len(t, tl.Items, 1)
		require.Equal(t, 4, tl.Items[0].MaxRunning)

		// --reset starts from nothing: with nothing else, it removes them.
		require.Contains(t, d.run(t, "queue", "key-limit", "default", "--reset").ok(t), "queue default: no limits")
		stored, err = d.lib.StoredLimits(ctx)
		require.NoError(t, err)
		require.Len(t, stored, 1, "only the topic's")

		d.run(t, "queue", "key-limit", "default").fails(t, 2, "wants --max-running, --rate with --per")
		d.run(t, "queue", "key-limit", "default", "--key", "acme").fails(t, 2, "KEY=MAX_RUNNING")
		d.run(t, "queue", "key-limit", "default", "--key", "acme=x").fails(t, 2, "not a number")
		d.run(t, "queue", "key-limit", "default", "--key", "acme=1:5/soon").fails(t, 2, "not a number")
		d.run(t, "queue", "key-limit", "default", "--sequence", "later").fails(t, 2, "Sequence")
		d.run(t, "queue", "key-limit", "default", "--max-running", "-1").fails(t, 2, "MaxRunning")
		d.run(t, "queue", "key-limit", "default", "--rate", "5").fails(t, 2, "--rate wants --per")
		d.run(t, "queue", "keys", "default", "--fair").fails(t, 2, "--fair does not go with queue keys")
		d.run(t, "queue", "keys", "default", "--limit", "-1").fails(t, 2, "limit")
		d.run(t, "queue", "keys").fails(t, 2, "one queue name")
		d.run(t, "topic", "key-limit", "mail", "--fair").fails(t, 2, "-fair")
		d.run(t, "topic", "limit", "mail", "--sequence", "hold").fails(t, 2, "--sequence does not go with topic limit")
		d.run(t, "topic", "limit", "mail").fails(t, 2, "wants --max-running")
		d.run(t, "topic").fails(t, 2, "list, limit or key-limit")
		d.run(t, "topic", "pause", "mail").fails(t, 2, "unknown topic verb")
		d.run(t, "enqueue", "mail", "--sequence", "hold").fails(t, 2, "Key")
		after, err := d.lib.StoredLimits(ctx)
		require.NoError(t, err)
		require.Equal(t, stored, after, "refused commands changed nothing")
	})
}

// TestHeldSequence fails the first job of a sequence: the next is held
// behind it, and explain says so.
func TestHeldSequence(t *testing.T) {
	t.Parallel()
	eachDB(t, true, func(t *testing.T, d *db) {
		enqueue := func() enqueuedJSON {
			return decode[enqueuedJSON](t, d.run(t, "enqueue", "fail", "--key", "acme", "--sequence", "hold", "--max-retries", "0", "--json").ok(t))
		}
		first, next := enqueue(), enqueue()
		stop := d.startFailing()
		t.Cleanup(stop)
		require.Eventually(t, func() bool {
			row, err := d.lib.Get(t.Context(), first.Job.ID)
			return err == nil && row.Status == sluice.StatusFailed
		}, 10*time.Second, 20*time.Millisecond)
		ex := decode[struct {
			Job    sluice.JobRow `json:"job"`
			Reason string        `json:"reason"`
			Key    string        `json:"key"`
			Ahead  string        `json:"ahead"`
		}](t, d.run(t, "explain", next.Job.ID, "--json").ok(t))
		require.Equal(t, sluice.StatusPending, ex.Job.Status)
		require.Equal(t, "sequence", ex.Reason)
		require.Equal(t, "acme", ex.Key)
		require.Equal(t, first.Job.ID, ex.Ahead)
		require.Contains(t, d.run(t, "explain", next.Job.ID).ok(t), "sequence")
		require.Contains(t, d.run(t, "get", next.Job.ID).ok(t), "hold (its key's jobs run one at a time, in order)")
	})
}
