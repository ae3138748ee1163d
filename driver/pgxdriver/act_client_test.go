package pgxdriver_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/pgxdriver"
	"github.com/sluicehq/sluice/internal/testkit/dbtest"
)

// A job cancelled by a client with a pool of its own, as another process
// would be, stops its worker within seconds and ends cancelled.
func TestCancelFromAnotherProcessStopsTheWorker(t *testing.T) {
	t.Parallel()
	pool, schema := dbtest.Pool(t)
	started, causes := make(chan string, 1), make(chan error, 1)
	w := sluice.NewWorkers()
	sluice.AddWorker(w, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[pgArgs]) error {
		started <- job.ID
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	}))
	worker, err := sluice.NewClient(pgxdriver.New(pool, pgxdriver.WithSchema(schema)), &sluice.Config{Workers: w, Logger: quiet})
	require.NoError(t, err)
	require.NoError(t, worker.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, worker.Stop(context.Background())) })

	otherPool, err := pgxpool.New(t.Context(), dbtest.URL(t))
	require.NoError(t, err)
	t.Cleanup(otherPool.Close)
	operator, err := sluice.NewClient(pgxdriver.New(otherPool, pgxdriver.WithSchema(schema)), &sluice.Config{Logger: quiet})
	require.NoError(t, err)

	res, err := operator.Enqueue(t.Context(), pgArgs{}, nil)
	require.NoError(t, err)
	require.Equal(t, res.Job.ID, <-started)
	row, err := operator.Cancel(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, sluice.StatusCancelled, row.Status)
	select {
	case cause := <-causes:
		require.ErrorIs(t, cause, sluice.ErrLeaseLost)
	case <-time.After(10 * time.Second):
		t.Fatal("the worker's context was not cancelled")
	}
	require.NoError(t, worker.Stop(t.Context()))
	got, err := operator.Get(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, sluice.StatusCancelled, got.Status)

	// A cancelled job cannot be cancelled again.
	_, err = operator.Cancel(t.Context(), res.Job.ID)
	require.ErrorIs(t, err, sluice.ErrStatusConflict)
}
