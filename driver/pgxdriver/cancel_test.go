package pgxdriver_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/dbtest"
)

// TestCancelledWhileBlocked cancels a finalize that waits for a row lock
// held by another transaction: the error matches the context's, and
// nothing is written, through the pool and in a caller's transaction.
func TestCancelledWhileBlocked(t *testing.T) {
	t.Parallel()
	d, pool, _ := newDriver(t)
	ctx := t.Context()
	_, err := d.Executor().JobInsertMany(ctx, params(jobs(1, "default")))
	require.NoError(t, err)
	rows := claim(t, d, "c", 1)
	require.Len(t, rows, 1)
	now := rows[0].AttemptedAt
	row := rows[0]
	item := &driver.JobFinalize{ID: row.ID, Attempt: row.Attempt, LockedBy: "c", AttemptedAt: row.AttemptedAt,
		Status: driver.StatusCompleted, FinalizedAt: now}

	locker, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = locker.Rollback(ctx) }()
	_, err = locker.Exec(ctx, `SELECT 1 FROM `+d.Table()+` WHERE id = $1 FOR UPDATE`, row.ID)
	require.NoError(t, err)

	finalize := func(ex driver.Executor) {
		// The statement waits for the lock until the context ends.
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		_, err := ex.JobFinalize(cctx, &driver.JobFinalizeParams{Jobs: []*driver.JobFinalize{item}})
		require.ErrorIs(t, err, context.DeadlineExceeded)
	}
	finalize(d.Executor())
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	finalize(d.UnwrapExecutor(tx))
	_ = tx.Rollback(ctx)

	require.NoError(t, locker.Rollback(ctx))
	got, err := d.Executor().JobGet(ctx, &driver.JobGetParams{ID: row.ID})
	require.NoError(t, err)
	require.Equal(t, driver.StatusProcessing, got.Status)
	matched, err := d.Executor().JobFinalize(ctx, &driver.JobFinalizeParams{Jobs: []*driver.JobFinalize{item}})
	require.NoError(t, err)
	require.Equal(t, []bool{true}, matched)
}

// TestForeignTx finalizes a claim in a transaction of a connection that is
// not the driver's pool.
func TestForeignTx(t *testing.T) {
	t.Parallel()
	d, _, schema := newDriver(t)
	ctx := t.Context()
	_, err := d.Executor().JobInsertMany(ctx, params(jobs(1, "default")))
	require.NoError(t, err)
	rows := claim(t, d, "c", 1)
	require.Len(t, rows, 1)
	now := rows[0].AttemptedAt

	cfg, err := pgx.ParseConfig(dbtest.URL(t))
	require.NoError(t, err)
	cfg.RuntimeParams["search_path"] = schema
	conn, err := pgx.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	matched, err := d.UnwrapExecutor(tx).JobFinalize(ctx, &driver.JobFinalizeParams{Jobs: []*driver.JobFinalize{{
		ID: rows[0].ID, Attempt: 1, LockedBy: "c", AttemptedAt: rows[0].AttemptedAt, Status: driver.StatusCompleted, FinalizedAt: now,
	}}})
	require.NoError(t, err)
	require.Equal(t, []bool{true}, matched)
	require.NoError(t, tx.Commit(ctx))
	got, err := d.Executor().JobGet(ctx, &driver.JobGetParams{ID: rows[0].ID})
	require.NoError(t, err)
	require.Equal(t, driver.StatusCompleted, got.Status)
}

// A claim whose caller gives up while it runs must still hand back what it
// claimed, or nothing: never jobs claimed by nobody who knows it.
func TestClaimsUnderCancelledContextsStrandNothing(t *testing.T) {
	t.Parallel()
	d, pool, _ := newDriver(t)
	ex := d.Executor()
	_, err := ex.JobInsertMany(t.Context(), params(jobs(3000, "default")))
	require.NoError(t, err)
	returned := 0
	for i := range 60 {
		ctx, cancel := context.WithTimeout(t.Context(), time.Duration(200+i*100)*time.Microsecond)
		now := time.Now()
		rows, _ := ex.JobClaim(ctx, &driver.JobClaimParams{ClientID: "c", Queue: "default", Topics: []string{"work"},
			Limit: 50, Now: now, LockedUntil: now.Add(time.Minute)})
		cancel()
		returned += len(rows)
	}
	var processing int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM sluice_jobs WHERE status = 'processing'`).Scan(&processing))
	require.Positive(t, processing, "some claims must have run")
	require.Equal(t, processing, returned, "every claimed job was handed to a caller")
}
