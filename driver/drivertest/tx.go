package drivertest

import (
	"context"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func getCases[TTx any]() []testCase[TTx] {
	return []testCase[TTx]{
		// Get returns the stored job.
		{name: "Found", twin: true, fn: testGetFound[TTx]},
		// Get of an unknown ID fails with an error matching ErrNotFound.
		{name: "NotFound", twin: true, fn: testGetNotFound[TTx]},
		// A transaction sees the jobs it inserted before it commits, and a
		// rollback discards them.
		{name: "SameTx", fn: testGetSameTx[TTx]},
	}
}

func migrateCases[TTx any]() []testCase[TTx] {
	return []testCase[TTx]{
		// Migrating a migrated database succeeds and keeps its jobs.
		{name: "Again", fn: testMigrateAgain[TTx]},
		// Migrations running at once all succeed.
		{name: "Concurrent", fn: testMigrateConcurrent[TTx]},
		// A driver that reports its migrations (driver.MigrationReporter)
		// reports every one applied, and hands out the SQL of each.
		{name: "Status", fn: testMigrateStatus[TTx]},
	}
}

func cancelCases[TTx any]() []testCase[TTx] {
	return []testCase[TTx]{
		// Every operation given a cancelled context fails with an error
		// matching context.Canceled, and leaves nothing once the caller
		// rolls back (or, on the driver's own handle, at all).
		{name: "Cancelled", twin: true, fn: testCancelled[TTx]},
		// The same for a context whose deadline has passed, with
		// context.DeadlineExceeded.
		{name: "DeadlineExceeded", twin: true, fn: testDeadlineExceeded[TTx]},
	}
}

// abortTx runs fn with an executor over a new transaction and rolls it back,
// ignoring the rollback's error: after an operation fails, the transaction's
// state is not specified and it may already be rolled back.
func (h *harness[TTx]) abortTx(fn func(ex driver.Executor)) {
	h.t.Helper()
	tx, err := h.s.Begin(h.ctx)
	require.NoError(h.t, err, "begin")
	defer func() { _ = h.s.Rollback(context.WithoutCancel(h.ctx), tx) }()
	fn(h.s.Driver.UnwrapExecutor(tx))
}

func testGetFound[TTx any](h *harness[TTx], m mode) {
	pending := h.insert(h.newJob())[0]
	processing := h.started(client1, nil)
	for _, want := range []*driver.JobRow{pending, processing} {
		var got *driver.JobRow
		h.via(m, func(ex driver.Executor) { got = h.getVia(ex, want.ID) })
		requireRow(h.t, want, got)
	}
}

func testGetNotFound[TTx any](h *harness[TTx], m mode) {
	h.insert(h.newJob())
	get := func(ex driver.Executor) {
		row, err := ex.JobGet(h.ctx, &driver.JobGetParams{ID: newID()})
		require.ErrorIs(h.t, err, driver.ErrNotFound, "JobGet of an unknown ID")
		require.Nil(h.t, row, "JobGet of an unknown ID")
	}
	if m.tx {
		h.abortTx(get)
		return
	}
	get(h.exec())
}

func testGetSameTx[TTx any](h *harness[TTx], _ mode) {
	for _, commit := range []bool{false, true} {
		j := h.newJob()
		h.inTx(commit, func(ex driver.Executor) {
			h.insertVia(ex, j)
			requireRow(h.t, pendingRow(j), h.getVia(ex, j.ID))
		})
		if commit {
			h.requireStored(pendingRow(j))
		} else {
			h.requireNotFound(j.ID)
		}
	}
}

func testMigrateAgain[TTx any](h *harness[TTx], _ mode) {
	row := h.insert(h.newJob())[0]
	for range 2 {
		require.NoError(h.t, h.s.Driver.Migrate(h.ctx), "Migrate of a migrated database")
	}
	h.requireStored(row)
	h.requireStored(h.insert(h.newJob())[0])
}

func testMigrateConcurrent[TTx any](h *harness[TTx], _ mode) {
	row := h.insert(h.newJob())[0]
	var (
		wg   sync.WaitGroup
		errs = make([]error, 4)
	)
	for i := range errs {
		wg.Go(func() { errs[i] = h.s.Driver.Migrate(h.ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(h.t, err, "concurrent Migrate %d", i)
	}
	h.requireStored(row)
	h.requireStored(h.insert(h.newJob())[0])
}

func testMigrateStatus[TTx any](h *harness[TTx], _ mode) {
	mr, ok := h.s.Driver.(driver.MigrationReporter)
	if !ok {
		return // optional: nothing to check
	}
	states, err := mr.MigrationStatus(h.ctx)
	require.NoError(h.t, err)
	require.NotEmpty(h.t, states)
	files, err := mr.Migrations()
	require.NoError(h.t, err)
	require.Len(h.t, files, len(states), "one SQL text per migration")
	for i, st := range states {
		require.True(h.t, st.Applied(), "migration %d (%s) applied", st.Version, st.Name)
		require.Contains(h.t, files, st.Name)
		require.NotEmpty(h.t, files[st.Name])
		if i > 0 {
			require.Greater(h.t, st.Version, states[i-1].Version, "in version order")
		}
	}
}

// cancelOp is one operation run with a dead context.
type cancelOp struct {
	name string
	run  func(ctx context.Context, ex driver.Executor) error
}

// cancelOps returns every operation, each of which would write (or read) if
// its context were alive: claimed is processing under client1 with a lease
// that a rescue at base+2m would take, pending is due at base, and fresh is
// not inserted yet.
func cancelOps[TTx any](h *harness[TTx], claimed, pending *driver.JobRow, fresh *driver.JobInsert) []cancelOp {
	return []cancelOp{
		{"JobInsertMany", func(ctx context.Context, ex driver.Executor) error {
			_, err := ex.JobInsertMany(ctx, &driver.JobInsertManyParams{Jobs: []*driver.JobInsert{fresh}})
			return err
		}},
		{"JobClaim", func(ctx context.Context, ex driver.Executor) error {
			_, err := ex.JobClaim(ctx, claimParams(h.base, pending.Topic))
			return err
		}},
		{"JobFinalize", func(ctx context.Context, ex driver.Executor) error {
			_, err := ex.JobFinalize(ctx, &driver.JobFinalizeParams{Jobs: []*driver.JobFinalize{
				ending(claimed, driver.StatusCompleted, h.at(time.Second)),
			}})
			return err
		}},
		{"JobProgress", func(ctx context.Context, ex driver.Executor) error {
			_, err := ex.JobProgress(ctx, &driver.JobProgressParams{Jobs: []*driver.JobProgressUpdate{
				progressing(claimed, 50, "half", h.at(time.Second)),
			}})
			return err
		}},
		{"JobHeartbeat", func(ctx context.Context, ex driver.Executor) error {
			_, err := ex.JobHeartbeat(ctx, &driver.JobHeartbeatParams{ClientID: client1, LockedUntil: h.at(time.Hour)})
			return err
		}},
		{"JobRescue", func(ctx context.Context, ex driver.Executor) error {
			_, err := ex.JobRescue(ctx, rescueParams(h.at(2*time.Minute)))
			return err
		}},
		{"JobGet", func(ctx context.Context, ex driver.Executor) error {
			_, err := ex.JobGet(ctx, &driver.JobGetParams{ID: claimed.ID})
			return err
		}},
		{"JobList", func(ctx context.Context, ex driver.Executor) error {
			_, err := ex.JobList(ctx, &driver.JobListParams{Limit: 10})
			return err
		}},
		{"JobStats", func(ctx context.Context, ex driver.Executor) error {
			_, err := ex.JobStats(ctx, &driver.JobStatsParams{Since: h.base})
			return err
		}},
		{"QueueLoad", func(ctx context.Context, ex driver.Executor) error {
			_, err := ex.QueueLoad(ctx, &driver.QueueLoadParams{Queue: pending.Queue, Now: h.base,
				Priority: pending.Priority, RunAt: pending.RunAt, ID: pending.ID, AheadLimit: 10})
			return err
		}},
		{"JobCancel", func(ctx context.Context, ex driver.Executor) error {
			_, err := ex.JobCancel(ctx, &driver.JobActParams{IDs: []string{claimed.ID, pending.ID}, Now: h.base})
			return err
		}},
		{"JobDelete", func(ctx context.Context, ex driver.Executor) error {
			_, err := ex.JobDelete(ctx, &driver.JobActParams{Now: h.base})
			return err
		}},
		{"JobRetryNow", func(ctx context.Context, ex driver.Executor) error {
			_, err := ex.JobRetryNow(ctx, &driver.JobActParams{Now: h.at(-time.Hour)})
			return err
		}},
		{"JobClean", func(ctx context.Context, ex driver.Executor) error {
			_, err := ex.JobClean(ctx, &driver.JobCleanParams{Status: driver.StatusFailed, Before: h.at(time.Hour), Limit: 10})
			return err
		}},
		{"ClientRecord", func(ctx context.Context, ex driver.Executor) error {
			return ex.ClientRecord(ctx, &driver.ClientRecordParams{Client: h.clientRow(client1, h.base)})
		}},
		{"JobHeld", func(ctx context.Context, ex driver.Executor) error {
			_, err := ex.JobHeld(ctx, &driver.JobHeldParams{ClientID: client1, IDs: []string{claimed.ID}})
			return err
		}},
	}
}

func testCancelled[TTx any](h *harness[TTx], m mode) {
	runDead(h, m, context.Canceled, func() (context.Context, context.CancelFunc) {
		ctx, cancel := context.WithCancel(h.ctx)
		cancel()
		return ctx, cancel
	})
}

func testDeadlineExceeded[TTx any](h *harness[TTx], m mode) {
	runDead(h, m, context.DeadlineExceeded, func() (context.Context, context.CancelFunc) {
		return context.WithDeadline(h.ctx, time.Now().Add(-time.Second))
	})
}

// runDead runs every operation with a context from dead and requires it to
// fail with want and write nothing. In a transaction, a job is inserted
// first with a live context; after the rollback it must be gone too.
func runDead[TTx any](h *harness[TTx], m mode, want error, dead func() (context.Context, context.CancelFunc)) {
	t := h.t
	j := h.newJob()
	j.MaxRetries = 0
	claimed := h.started(client1, j)
	pending := h.insert(h.newJob())[0]
	fresh := h.newJob()

	for _, op := range cancelOps(h, claimed, pending, fresh) {
		ctx, cancel := dead()
		check := func(ex driver.Executor) {
			err := op.run(ctx, ex)
			require.ErrorIs(t, err, want, "%s with a dead context", op.name)
		}
		if !m.tx {
			check(h.exec())
		} else {
			marker := h.newJob()
			h.abortTx(func(ex driver.Executor) {
				h.insertVia(ex, marker)
				check(ex)
			})
			h.requireNotFound(marker.ID)
		}
		cancel()
		h.requireStored(claimed)
		h.requireStored(pending)
		h.requireNotFound(fresh.ID)
	}
}
