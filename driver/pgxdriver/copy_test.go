package pgxdriver_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/pgxdriver"
)

// count returns how many jobs the driver's table holds.
func count(t *testing.T, pool *pgxpool.Pool, d *pgxdriver.Driver) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM `+d.Table()).Scan(&n))
	return n
}

func TestCopyInsert(t *testing.T) {
	t.Parallel()
	d, pool, _ := newDriver(t)
	ctx := t.Context()
	batch := jobs(pgxdriver.CopyThreshold+50, "bulk")
	batch[7].UniqueKey = "bulk-unique"
	batch[9].Queue = "other"
	res, err := d.Executor().JobInsertMany(ctx, params(batch))
	require.NoError(t, err)
	require.Len(t, res, len(batch))
	for i, r := range res {
		require.False(t, r.Duplicate, "result %d", i)
		require.Equal(t, batch[i].ID, r.Job.ID, "result %d", i)
		got, err := d.Executor().JobGet(ctx, &driver.JobGetParams{ID: batch[i].ID})
		require.NoError(t, err)
		require.Equal(t, batch[i].Queue, got.Queue)
		require.JSONEq(t, string(batch[i].Payload), string(got.Payload))
		require.True(t, r.Job.RunAt.Equal(got.RunAt), "RunAt of result %d", i)
	}
	require.Equal(t, len(batch), count(t, pool, d))

	// A second batch with the same unique key gets the first job back.
	again := jobs(pgxdriver.CopyThreshold, "bulk")
	again[0].UniqueKey = "bulk-unique"
	res, err = d.Executor().JobInsertMany(ctx, params(again))
	require.NoError(t, err)
	require.True(t, res[0].Duplicate)
	require.Equal(t, batch[7].ID, res[0].Job.ID)
	require.Equal(t, 2*len(batch)-50-1, count(t, pool, d))
}

// TestCopyAtomic checks that a COPY batch that fails part way (an ID that
// exists) inserts nothing, through the pool and in a transaction.
func TestCopyAtomic(t *testing.T) {
	t.Parallel()
	d, pool, _ := newDriver(t)
	ctx := t.Context()
	existing := jobs(1, "bulk")
	_, err := d.Executor().JobInsertMany(ctx, params(existing))
	require.NoError(t, err)

	batch := jobs(3*pgxdriver.CopyThreshold, "bulk")
	batch[len(batch)-1].ID = existing[0].ID
	_, err = d.Executor().JobInsertMany(ctx, params(batch))
	require.Error(t, err)
	require.Equal(t, 1, count(t, pool, d), "jobs after a failed COPY")

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	_, err = d.UnwrapExecutor(tx).JobInsertMany(ctx, params(batch))
	require.Error(t, err)
	require.NoError(t, tx.Rollback(ctx))
	require.Equal(t, 1, count(t, pool, d), "jobs after a failed COPY in a transaction")

	// A COPY in a transaction that rolls back leaves nothing either.
	tx, err = pool.Begin(ctx)
	require.NoError(t, err)
	_, err = d.UnwrapExecutor(tx).JobInsertMany(ctx, params(batch[:len(batch)-1]))
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	require.Equal(t, 1, count(t, pool, d), "jobs after a rolled back COPY")
}
