package sqlitedriver_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// TestWithClaimGate: a claim on the driver's handle waits for the gate and
// claims nothing when it refuses; inserts, and claims in a caller's
// transaction, never consult it.
func TestWithClaimGate(t *testing.T) {
	t.Parallel()
	refuse := errors.New("the app is busy")
	var calls atomic.Int64
	release := make(chan error)
	d, db := newDriver(t, 0, sqlitedriver.WithClaimGate(func(ctx context.Context) error {
		calls.Add(1)
		select {
		case err := <-release:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}))
	ex := d.Executor()
	ctx := t.Context()
	insert(t, ex, newJob(), newJob(), newJob()) // the gate is not asked
	require.Zero(t, calls.Load())

	claimed := make(chan []*driver.JobRow, 1)
	failed := make(chan error, 1)
	go func() {
		jobs, err := ex.JobClaim(ctx, &driver.JobClaimParams{ClientID: "c", Queue: "default",
			Topics: []string{"email"}, Limit: 1, Now: base, LockedUntil: base.Add(time.Minute)})
		if err != nil {
			failed <- err
			return
		}
		claimed <- jobs
	}()
	require.Eventually(t, func() bool { return calls.Load() == 1 }, 10*time.Second, time.Millisecond)
	// While the gate holds the claim, nothing is claimed.
	st := pendingCount(t, ex)
	require.Equal(t, 3, st)
	release <- nil
	select {
	case jobs := <-claimed:
		require.Len(t, jobs, 1)
	case err := <-failed:
		t.Fatal(err)
	}

	// A gate that refuses fails the claim with its error, and claims
	// nothing.
	go func() { release <- refuse }()
	_, err := ex.JobClaim(ctx, &driver.JobClaimParams{ClientID: "c", Queue: "default",
		Topics: []string{"email"}, Limit: 5, Now: base, LockedUntil: base.Add(time.Minute)})
	require.ErrorIs(t, err, refuse)
	require.Equal(t, 2, pendingCount(t, ex))

	// A claim in the caller's transaction runs at once.
	before := calls.Load()
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	jobs := claim(t, d.UnwrapExecutor(tx), "c", 5)
	require.NoError(t, tx.Commit())
	require.Len(t, jobs, 2)
	require.Equal(t, before, calls.Load())
}

// pendingCount returns how many jobs are pending.
func pendingCount(t *testing.T, ex driver.Executor) int {
	t.Helper()
	list, err := ex.JobList(t.Context(), &driver.JobListParams{Filter: driver.JobFilter{Statuses: []driver.JobStatus{driver.StatusPending}}, Limit: 100})
	require.NoError(t, err)
	return list.Total
}
