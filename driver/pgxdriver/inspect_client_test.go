package pgxdriver_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/pgxdriver"
	"github.com/sluicehq/sluice/internal/testkit/dbtest"
)

// A running job's progress, its last attempt and Explain's capacity check,
// end to end on Postgres.
func TestProgressHistoryAndCapacityOnPostgres(t *testing.T) {
	t.Parallel()
	pool, schema := dbtest.Pool(t)
	running, release := make(chan struct{}), make(chan struct{})
	w := sluice.NewWorkers()
	sluice.AddWorker(w, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[pgArgs]) error {
		if err := sluice.ReportProgress(ctx, 33.3, "a third \u2713"); err != nil {
			return err
		}
		running <- struct{}{}
		<-release
		return nil
	}))
	c, err := sluice.NewClient(pgxdriver.New(pool, pgxdriver.WithSchema(schema)), &sluice.Config{
		Workers: w, Logger: quiet, ProgressInterval: 20 * time.Millisecond,
		Queues: map[string]sluice.QueueConfig{sluice.QueueDefault: {MaxWorkers: 1}},
	})
	require.NoError(t, err)
	progressed := c.Subscribe(sluice.EventProgressed)
	defer progressed.Close()
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, c.Stop(context.Background())) })

	first, err := c.Enqueue(t.Context(), pgArgs{N: 1}, nil)
	require.NoError(t, err)
	<-running
	second, err := c.Enqueue(t.Context(), pgArgs{N: 2}, nil)
	require.NoError(t, err)
	ex, err := c.Explain(t.Context(), second.Job.ID)
	require.NoError(t, err)
	require.Equal(t, sluice.ReasonQueueBusy, ex.Reason, ex.Text)
	require.Contains(t, ex.Text, `all 1 worker(s) of queue "default"`)

	select {
	case ev := <-progressed.C:
		require.Equal(t, first.Job.ID, ev.Job.ID)
	case <-time.After(10 * time.Second):
		t.Fatal("no progress stored")
	}
	row, err := c.Get(t.Context(), first.Job.ID)
	require.NoError(t, err)
	require.Equal(t, &sluice.JobProgress{Attempt: 1, Percent: 33.3, Message: "a third \u2713", At: row.Progress.At}, row.Progress)
	require.Equal(t, time.UTC, row.Progress.At.Location())

	release <- struct{}{} // the first job completes; the second starts
	<-running
	close(release)
	require.Eventually(t, func() bool {
		row, err = c.Get(t.Context(), first.Job.ID)
		require.NoError(t, err)
		return row.Status == sluice.StatusCompleted
	}, 10*time.Second, 10*time.Millisecond)
	history := row.History()
	require.Len(t, history, 1)
	require.Equal(t, row.AttemptedBy, history[0].ClientID)
	require.True(t, history[0].EndedAt.Equal(row.FinalizedAt))
	require.Equal(t, 33.3, row.Progress.Percent, "kept after the job ended")
}
