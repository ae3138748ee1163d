package sqlitedriver_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// TestSingleConnection runs every operation on a handle of one connection,
// through the driver's handle and inside a transaction, first on a cold
// driver that has prepared nothing. A driver that waited for a second
// connection would hang until the deadline.
func TestSingleConnection(t *testing.T) {
	t.Parallel()
	db, _ := openDB(t, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// Migrate on one driver, then work through a fresh one whose statement
	// cache is empty.
	require.NoError(t, newDriverOn(db).Migrate(ctx))
	d := newDriverOn(db)

	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	exerciseAll(t, ctx, d.UnwrapExecutor(tx), "tx")
	require.NoError(t, tx.Commit())

	exerciseAll(t, ctx, d.Executor(), "db")

	// And once more inside a transaction, now that statements are cached.
	tx, err = db.BeginTx(ctx, nil)
	require.NoError(t, err)
	exerciseAll(t, ctx, d.UnwrapExecutor(tx), "tx2")
	require.NoError(t, tx.Rollback())
	require.NoError(t, ctx.Err())
}

// exerciseAll runs every operation of ex once, with batches, unique jobs
// and errors, as client.
func exerciseAll(t *testing.T, ctx context.Context, ex driver.Executor, client string) {
	t.Helper()
	var jobs []*driver.JobInsert
	for range 300 {
		jobs = append(jobs, newJob())
	}
	jobs = append(jobs, newJob(func(j *driver.JobInsert) { j.UniqueKey = "k-" + client }))
	jobs = append(jobs, newJob(func(j *driver.JobInsert) { j.UniqueKey = "k-" + client }))
	res, err := ex.JobInsertMany(ctx, &driver.JobInsertManyParams{Jobs: jobs})
	require.NoError(t, err)
	require.True(t, res[len(res)-1].Duplicate)

	claimed, err := ex.JobClaim(ctx, &driver.JobClaimParams{
		ClientID: client, Queue: "default", Topics: []string{"email"}, Limit: 4, Now: base, LockedUntil: base,
	})
	require.NoError(t, err)
	require.Len(t, claimed, 4)

	n, err := ex.JobHeartbeat(ctx, &driver.JobHeartbeatParams{ClientID: client, LockedUntil: base.Add(time.Second)})
	require.NoError(t, err)
	require.Equal(t, 4, n)

	matched, err := ex.JobFinalize(ctx, &driver.JobFinalizeParams{Jobs: []*driver.JobFinalize{
		{ID: claimed[0].ID, Attempt: claimed[0].Attempt, LockedBy: client, AttemptedAt: claimed[0].AttemptedAt,
			Status: driver.StatusCompleted, FinalizedAt: base},
		{ID: claimed[1].ID, Attempt: claimed[1].Attempt, LockedBy: client, AttemptedAt: claimed[1].AttemptedAt,
			Status: driver.StatusPending, RunAt: base,
			Error: &driver.AttemptError{Attempt: claimed[1].Attempt, At: base, Error: "boom"}},
	}})
	require.NoError(t, err)
	require.Equal(t, []bool{true, true}, matched)

	// A stopping client hands a job back: pending at once, its retry given back.
	handedBack, err := ex.JobFinalize(ctx, &driver.JobFinalizeParams{Jobs: []*driver.JobFinalize{
		{ID: claimed[2].ID, Attempt: claimed[2].Attempt, LockedBy: client, AttemptedAt: claimed[2].AttemptedAt,
			Status: driver.StatusPending, RunAt: base, Snooze: true},
	}})
	require.NoError(t, err)
	require.Equal(t, []bool{true}, handedBack)

	rescued, err := ex.JobRescue(ctx, &driver.JobRescueParams{Now: base.Add(time.Hour), Limit: 10,
		Error: driver.AttemptError{At: base, Error: "lost"}})
	require.NoError(t, err)
	require.Equal(t, []string{claimed[3].ID}, ids(rescued))

	got, err := ex.JobGet(ctx, &driver.JobGetParams{ID: claimed[1].ID})
	require.NoError(t, err)
	require.NotEmpty(t, got.Errors)
}

// TestTxFromAnotherHandle runs every operation in a transaction of another
// handle on the same file (as an application with separate read and write
// pools passes), after the driver has prepared its statements on its own.
func TestTxFromAnotherHandle(t *testing.T) {
	t.Parallel()
	d, _, path := newDriverPath(t)
	ctx := t.Context()
	exerciseAll(t, ctx, d.Executor(), "warm")

	other, err := sqlitedriver.Open(path)
	require.NoError(t, err)
	defer other.Close()
	tx, err := other.BeginTx(ctx, nil)
	require.NoError(t, err)
	exerciseAll(t, ctx, d.UnwrapExecutor(tx), "other")
	require.NoError(t, tx.Commit())
}
