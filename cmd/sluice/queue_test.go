package main_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/sluiceweb"
)

// TestQueue pauses, resumes and limits a queue, and sees each state stored
// where every client reads it.
func TestQueue(t *testing.T) {
	t.Parallel()
	eachDB(t, true, func(t *testing.T, d *db) {
		ctx := t.Context()
		require.Contains(t, d.run(t, "queue", "list").ok(t), "no queue is paused or limited")

		st := decode[sluiceweb.QueueStateResponse](t, d.run(t, "queue", "pause", "mail", "--json").ok(t))
		require.Equal(t, "mail", st.Queue)
		require.True(t, st.Paused)
		stored, err := d.lib.QueueStates(ctx)
		require.NoError(t, err)
		require.Len(t, stored, 1)
		require.True(t, stored[0].Paused, "the stored state")
		require.Contains(t, d.run(t, "queue", "list").ok(t), "paused")

		require.Contains(t, d.run(t, "queue", "limit", "mail", "--max-running", "3").ok(t), "queue mail: paused, at most 3 running at once")
		out := d.run(t, "queue", "limit", "mail", "--rate", "10", "--per", "1s").ok(t)
		require.Contains(t, out, "at most 3 running at once, at most 10 started per 1s", "the limit not given is kept")

		st = decode[sluiceweb.QueueStateResponse](t, d.run(t, "queue", "resume", "mail", "--json").ok(t))
		require.False(t, st.Paused)
		require.Equal(t, 3, st.MaxRunning)
		require.Equal(t, 10, st.RateLimit)
		require.Equal(t, time.Second.Seconds(), st.RatePeriodSeconds)
		list := decode[struct {
			Items []*sluiceweb.QueueStateResponse `json:"items"`
		}](t, d.run(t, "queue", "list", "--json").ok(t))
		require.Len(t, list.Items, 1)
		require.False(t, list.Items[0].Paused)

		st = decode[sluiceweb.QueueStateResponse](t, d.run(t, "queue", "limit", "mail", "--max-running", "0", "--rate", "0", "--json").ok(t))
		require.Zero(t, st.MaxRunning)
		require.Zero(t, st.RateLimit)

		d.run(t, "queue").fails(t, 2, "list, pause, resume, limit, key-limit or keys")
		d.run(t, "queue", "stop", "mail").fails(t, 2, "unknown queue verb")
		d.run(t, "queue", "pause").fails(t, 2, "one queue name")
		d.run(t, "queue", "pause", "a", "b").fails(t, 2, "one queue name")
		d.run(t, "queue", "limit", "mail").fails(t, 2, "wants --max-running")
		d.run(t, "queue", "limit", "mail", "--rate", "5").fails(t, 2, "--rate wants --per")
		d.run(t, "queue", "pause", "mail", "--max-running", "2").fails(t, 2, "--max-running does not go with queue pause")
		d.run(t, "queue", "limit", "mail", "--per", "1s").fails(t, 2, "--per goes with --rate")
		stored, err = d.lib.QueueStates(ctx)
		require.NoError(t, err)
		require.False(t, stored[0].Paused, "refused commands changed nothing")
	})
}
