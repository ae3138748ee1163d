package pgxdriver_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

// A release pass passes over the waiting jobs another transaction holds
// (here a caller's that settled them itself, as WorkNextTx does, and has
// not committed) instead of waiting for it; those jobs are settled once.
func TestReleaseSkipsJobsAnotherTransactionHolds(t *testing.T) {
	t.Parallel()
	d, pool, _ := newDriver(t)
	ctx := t.Context()
	dep := newJob("default")
	released, cancelled := newJob("default"), newJob("default")
	released.DependsOn, released.OnDependencyFailure = []string{dep.ID}, driver.DependencyCancel
	cancelled.DependsOn, cancelled.OnDependencyFailure = []string{newID()}, driver.DependencyCancel // gone
	_, err := d.Executor().JobInsertMany(ctx, params([]*driver.JobInsert{dep, released, cancelled}))
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE sluice_jobs SET status = 'completed', finalized_at = now() WHERE id = $1`, dep.ID)
	require.NoError(t, err)
	release := func(ex driver.Executor) []string {
		t.Helper()
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		rows, err := ex.JobRelease(rctx, &driver.JobReleaseParams{Now: time.Now(), Limit: 100})
		require.NoError(t, err, "a release waited for another transaction")
		var ids []string
		for _, r := range rows {
			ids = append(ids, r.ID)
		}
		return ids
	}

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	require.ElementsMatch(t, []string{released.ID, cancelled.ID}, release(d.UnwrapExecutor(tx)))
	require.Empty(t, release(d.Executor()), "settled by the open transaction")
	require.NoError(t, tx.Commit(ctx))
	require.Empty(t, release(d.Executor()), "settled twice")
	got, err := d.Executor().JobGet(ctx, &driver.JobGetParams{ID: cancelled.ID})
	require.NoError(t, err)
	require.Equal(t, driver.StatusCancelled, got.Status)
}

// A dependency being requeued, in a transaction not yet committed, while a
// release pass looks at its dependents is not failed to the pass: the
// dependent that would be cancelled (or, with DependencyRun, released)
// because of it waits on, and waits for it once the requeue commits.
func TestReleaseLeavesDependentsOfADependencyBeingRequeued(t *testing.T) {
	t.Parallel()
	d, pool, _ := newDriver(t)
	ctx := t.Context()
	dep := newJob("default")
	cancelled, run := newJob("default"), newJob("default")
	cancelled.DependsOn, cancelled.OnDependencyFailure = []string{dep.ID}, driver.DependencyCancel
	run.DependsOn, run.OnDependencyFailure = []string{dep.ID}, driver.DependencyRun
	_, err := d.Executor().JobInsertMany(ctx, params([]*driver.JobInsert{dep, cancelled, run}))
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE sluice_jobs SET status = 'failed', finalized_at = now() WHERE id = $1`, dep.ID)
	require.NoError(t, err)

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	requeued, err := d.UnwrapExecutor(tx).JobRequeue(ctx, &driver.JobActParams{IDs: []string{dep.ID}, Now: time.Now(), Retries: 1})
	require.NoError(t, err)
	require.Len(t, requeued, 1)
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	settled, err := d.Executor().JobRelease(rctx, &driver.JobReleaseParams{Now: time.Now(), Limit: 100})
	require.NoError(t, err)
	require.Empty(t, settled, "settled on a dependency being requeued")
	require.NoError(t, tx.Commit(ctx))
	settled, err = d.Executor().JobRelease(ctx, &driver.JobReleaseParams{Now: time.Now(), Limit: 100})
	require.NoError(t, err)
	require.Empty(t, settled, "settled on a requeued dependency")
	for _, id := range []string{cancelled.ID, run.ID} {
		got, err := d.Executor().JobGet(ctx, &driver.JobGetParams{ID: id})
		require.NoError(t, err)
		require.True(t, got.Waiting, "job %s", id)
	}
}
