package main_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

// actOut is a bulk action's --json output.
type actOut struct {
	Action string   `json:"action"`
	Count  int      `json:"count"`
	IDs    []string `json:"ids"`
}

func TestActOnIDs(t *testing.T) {
	t.Parallel()
	eachDB(t, true, func(t *testing.T, d *db) {
		ctx := t.Context()
		later := d.enqueue(t, "t", "--run-at", "1h")
		other := d.enqueue(t, "t")

		// retry makes a delayed job due now.
		rows := decode[[]*sluice.JobRow](t, d.run(t, "retry", "--json", later.ID).ok(t))
		require.Len(t, rows, 1)
		require.WithinDuration(t, time.Now(), rows[0].RunAt, time.Minute)

		// cancel, then requeue.
		require.Contains(t, d.run(t, "cancel", later.ID).ok(t), "cancelled "+later.ID)
		row, err := d.lib.Get(ctx, later.ID)
		require.NoError(t, err)
		require.Equal(t, sluice.StatusCancelled, row.Status)
		rows = decode[[]*sluice.JobRow](t, d.run(t, "requeue", "--json", later.ID).ok(t))
		require.Equal(t, sluice.StatusPending, rows[0].Status)

		// requeue of a pending job is refused; the others named still act.
		r := d.run(t, "requeue", later.ID, other.ID)
		r.fails(t, 1, "cannot requeue")
		r = d.run(t, "cancel", "--json", "01900000-0000-7000-8000-000000000000", other.ID)
		r.fails(t, 3, "no job 01900000-0000-7000-8000-000000000000")
		require.Equal(t, []string{other.ID}, ids(decode[[]*sluice.JobRow](t, r.stdout)))

		require.Contains(t, d.run(t, "delete", later.ID).ok(t), "deleted "+later.ID)
		_, err = d.lib.Get(ctx, later.ID)
		require.ErrorIs(t, err, sluice.ErrNotFound)
		d.run(t, "get", later.ID).fails(t, 3, "no job "+later.ID)

		d.run(t, "cancel").fails(t, 2, "job IDs or at least one filter")
		d.run(t, "cancel", other.ID, "--topic", "t").fails(t, 2, "not both")
		d.run(t, "delete", "--status", "nope").fails(t, 2, "nope")
	})
}

// TestActByFilter acts on more jobs than one batch holds, in batches, and
// on exactly the jobs the filter selects.
func TestActByFilter(t *testing.T) {
	t.Parallel()
	eachDB(t, true, func(t *testing.T, d *db) {
		ctx := t.Context()
		const n = 2500 // two and a half batches
		params := make([]sluice.EnqueueParams, n)
		for i := range params {
			params[i] = sluice.EnqueueParams{Args: sluice.RawArgs{TopicName: "bulk"},
				Options: &sluice.EnqueueOptions{Queue: "bulk", RunAt: time.Now().Add(time.Hour)}}
		}
		_, err := d.lib.EnqueueMany(ctx, params)
		require.NoError(t, err)
		keep := d.enqueue(t, "keep", "--run-at", "1h")

		res := decode[actOut](t, d.run(t, "retry", "--json", "--queue", "bulk").ok(t))
		require.Equal(t, actOut{Action: "retry", Count: n, IDs: res.IDs}, res)
		require.Len(t, uniq(res.IDs), n, "each job once")
		due := decode[listOut](t, d.run(t, "list", "--json", "--run-at-before", "1m", "--limit", "1").ok(t))
		require.Equal(t, n, due.Total)

		r := d.run(t, "cancel", "--topic", "bulk")
		require.Equal(t, "cancelled 2500 jobs\n", r.ok(t))
		require.Empty(t, r.stderr, "no progress line when stdout is not a terminal")
		st := decode[statsOut](t, d.run(t, "stats", "--json").ok(t))
		require.Equal(t, map[sluice.JobStatus]int{sluice.StatusCancelled: n, sluice.StatusPending: 1}, st.ByStatus)

		res = decode[actOut](t, d.run(t, "requeue", "--json", "--status", "cancelled", "--created-from", "-1h").ok(t))
		require.Equal(t, n, res.Count)
		res = decode[actOut](t, d.run(t, "delete", "--json", "--topic", "bulk").ok(t))
		require.Equal(t, n, res.Count)
		all := decode[listOut](t, d.run(t, "list", "--json").ok(t))
		require.Equal(t, []string{keep.ID}, ids(all.Jobs))

		// A filter that selects nothing changes nothing.
		require.Equal(t, "deleted 0 jobs\n", d.run(t, "delete", "--topic", "none").ok(t))
		res = decode[actOut](t, d.run(t, "delete", "--json", "--topic", "none").ok(t))
		require.Equal(t, actOut{Action: "delete", IDs: []string{}}, res)
	})
}

// TestRequeueFailed requeues a job that a worker failed: the dead letter.
func TestRequeueFailed(t *testing.T) {
	t.Parallel()
	eachDB(t, true, func(t *testing.T, d *db) {
		job := d.enqueue(t, "fail", "--max-retries", "0")
		stop := d.startFailing()
		require.Eventually(t, func() bool {
			row, err := d.lib.Get(context.Background(), job.ID)
			return err == nil && row.Status == sluice.StatusFailed
		}, 30*time.Second, 20*time.Millisecond)
		stop()
		got := decode[*sluice.JobRow](t, d.run(t, "get", "--json", job.ID).ok(t))
		require.Len(t, got.Errors, 1)
		require.Contains(t, d.run(t, "get", job.ID).ok(t), "always fails")
		st := decode[statsOut](t, d.run(t, "stats", "--json").ok(t))
		require.Equal(t, 1, st.Failed)
		require.NotNil(t, st.SuccessRate)
		require.Zero(t, *st.SuccessRate)
		require.Contains(t, d.run(t, "stats").ok(t), "0 completed, 1 failed, success rate 0.0%")

		res := decode[actOut](t, d.run(t, "requeue", "--json", "--status", "failed").ok(t))
		require.Equal(t, []string{job.ID}, res.IDs)
		row, err := d.lib.Get(t.Context(), job.ID)
		require.NoError(t, err)
		require.Equal(t, sluice.StatusPending, row.Status)
	})
}

func uniq(ss []string) map[string]bool {
	m := map[string]bool{}
	for _, s := range ss {
		m[s] = true
	}
	return m
}
