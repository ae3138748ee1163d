package sluice_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

func TestStatsSeriesCountsOutcomesPerBucket(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testStatsSeriesCountsOutcomesPerBucket[*sql.Tx], testStatsSeriesCountsOutcomesPerBucket[pgx.Tx])
}

func testStatsSeriesCountsOutcomesPerBucket[TTx any](t *testing.T, k *kit[TTx]) {
	c := k.client(t, &sluice.Config{Workers: workers(func(_ context.Context, job *sluice.Job[noteArgs]) error {
		if job.Args.N == 0 {
			return errors.New("no")
		}
		return nil
	})})
	for _, n := range []int{0, 1, 2} {
		res, err := c.Enqueue(t.Context(), noteArgs{N: n}, &sluice.EnqueueOptions{MaxRetries: sluice.NoRetries})
		require.NoError(t, err)
		want := sluice.StatusCompleted
		if n == 0 {
			want = sluice.StatusFailed
		}
		waitFor(t, c, res.Job.ID, want)
	}
	st, err := c.Stats(t.Context(), &sluice.StatsFilter{Window: 10 * time.Minute, Bucket: time.Minute})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(st.Series), 10)
	require.LessOrEqual(t, len(st.Series), 11)
	var completed, failed int
	for i, p := range st.Series {
		require.Zero(t, p.Start.Second(), "bucket %d starts on a minute", i)
		if i > 0 {
			require.Equal(t, time.Minute, p.Start.Sub(st.Series[i-1].Start))
		}
		completed += p.Completed
		failed += p.Failed
	}
	require.Equal(t, 2, completed)
	require.Equal(t, 1, failed)
	require.Equal(t, st.Completed, completed)
	last := st.Series[len(st.Series)-1]
	require.False(t, last.Start.After(time.Now()))

	st, err = c.Stats(t.Context(), nil)
	require.NoError(t, err)
	require.Nil(t, st.Series)

	for _, f := range []*sluice.StatsFilter{
		{Bucket: time.Millisecond},
		{Bucket: -time.Minute},
		{Window: 24 * time.Hour, Bucket: time.Second},
	} {
		_, err := c.Stats(t.Context(), f)
		var fe *sluice.FilterError
		require.ErrorAs(t, err, &fe, "bucket %s", f.Bucket)
		require.Equal(t, "Bucket", fe.Field)
	}
}

func TestStatsOldestDueIsTheLongestWaitOfEachQueue(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testStatsOldestDue[*sql.Tx], testStatsOldestDue[pgx.Tx])
}

func testStatsOldestDue[TTx any](t *testing.T, k *kit[TTx]) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	c := k.client(t, &sluice.Config{Clock: func() time.Time { return now },
		Queues: map[string]sluice.QueueConfig{"default": {}, "mail": {}, "idle": {}}})
	enqueue := func(queue string, runAt time.Time, priority int) {
		t.Helper()
		_, err := c.Enqueue(t.Context(), noteArgs{}, &sluice.EnqueueOptions{Queue: queue, RunAt: runAt, Priority: priority})
		require.NoError(t, err)
	}
	enqueue("default", now.Add(-time.Minute), 1)
	enqueue("default", now.Add(-5*time.Minute), 3) // the longest wait, at a later priority
	enqueue("default", now.Add(time.Hour), 0)      // not due
	enqueue("mail", now.Add(-30*time.Second), 2)
	enqueue("idle", now.Add(time.Minute), 1) // nothing due in idle

	st, err := c.Stats(t.Context(), &sluice.StatsFilter{OldestDue: true})
	require.NoError(t, err)
	require.Equal(t, map[string]time.Time{"default": now.Add(-5 * time.Minute), "mail": now.Add(-30 * time.Second)},
		st.OldestDue)
	st, err = c.Stats(t.Context(), &sluice.StatsFilter{OldestDue: true, Queues: []string{"mail", "idle"}})
	require.NoError(t, err)
	require.Equal(t, map[string]time.Time{"mail": now.Add(-30 * time.Second)}, st.OldestDue)
	st, err = c.Stats(t.Context(), nil)
	require.NoError(t, err)
	require.Nil(t, st.OldestDue, "not asked for")
}
