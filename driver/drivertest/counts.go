package drivertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

// testStatsKept checks that Stats of a filter on statuses, topics and
// queues alone, which a driver may answer from counts it keeps, agrees
// with counting the table, after each kind of write the contract has, in
// the transaction that made it and after a rollback.
func testStatsKept[TTx any](h *harness[TTx], m mode) {
	step := func(name string, fn func(ex driver.Executor)) {
		h.t.Helper()
		h.via(m, func(ex driver.Executor) {
			fn(ex)
			h.requireCountsAgree(ex, name+", in its transaction")
		})
		h.requireCountsAgree(h.exec(), name)
	}
	var rows []*driver.JobRow
	step("insert", func(ex driver.Executor) {
		jobs := append(h.jobs(4, "kept_a"), h.jobs(4, "kept_b")...)
		for i, j := range jobs {
			j.Queue = []string{"default", "other"}[i%2]
		}
		jobs[0].UniqueKey = "kept"
		for _, r := range h.insertVia(ex, jobs...) {
			rows = append(rows, r.Job)
		}
	})
	step("duplicate insert", func(ex driver.Executor) {
		j := h.newJob()
		j.UniqueKey = "kept"
		require.True(h.t, h.insertVia(ex, j)[0].Duplicate)
	})
	var claimed []*driver.JobRow
	step("claim", func(ex driver.Executor) {
		claimed = h.claimVia(ex, claimParams(h.base, "kept_a", "kept_b"))
		require.Len(h.t, claimed, 4)
	})
	step("heartbeat", func(ex driver.Executor) {
		_, err := ex.JobHeartbeat(h.ctx, &driver.JobHeartbeatParams{ClientID: client1, LockedUntil: h.at(time.Hour)})
		require.NoError(h.t, err)
	})
	step("finalize", func(ex driver.Executor) {
		h.finalizeVia(ex,
			ending(claimed[0], driver.StatusCompleted, h.at(time.Second)),
			ending(claimed[1], driver.StatusFailed, h.at(time.Second)),
			retrying(claimed[2], h.at(time.Hour), &driver.AttemptError{Attempt: 1, At: h.base, Error: "boom"}))
	})
	step("rescue", func(ex driver.Executor) {
		rescued := h.rescueVia(ex, &driver.JobRescueParams{Now: h.at(2 * time.Hour), Limit: 10,
			Error: driver.AttemptError{At: h.at(2 * time.Hour), Error: "lease expired"}})
		require.Len(h.t, rescued, 1)
	})
	act := func(name string, fn func(driver.Executor, *driver.JobActParams) ([]*driver.JobRow, error), ids ...string) {
		step(name, func(ex driver.Executor) {
			_, err := fn(ex, &driver.JobActParams{IDs: ids, Now: h.at(3 * time.Hour), Retries: 1})
			require.NoError(h.t, err, name)
		})
	}
	act("cancel", func(ex driver.Executor, p *driver.JobActParams) ([]*driver.JobRow, error) {
		return ex.JobCancel(h.ctx, p)
	}, rows[1].ID, rows[3].ID) // pending jobs of queue "other"; "default"'s were claimed
	act("requeue", func(ex driver.Executor, p *driver.JobActParams) ([]*driver.JobRow, error) {
		return ex.JobRequeue(h.ctx, p)
	}, rows[1].ID, claimed[1].ID)
	act("retry now", func(ex driver.Executor, p *driver.JobActParams) ([]*driver.JobRow, error) {
		return ex.JobRetryNow(h.ctx, p)
	}, claimed[2].ID)
	act("delete", func(ex driver.Executor, p *driver.JobActParams) ([]*driver.JobRow, error) {
		return ex.JobDelete(h.ctx, p)
	}, rows[3].ID, rows[5].ID)
	step("clean", func(ex driver.Executor) {
		n, err := ex.JobClean(h.ctx, &driver.JobCleanParams{Status: driver.StatusCompleted, Before: h.at(time.Hour), Limit: 10})
		require.NoError(h.t, err)
		require.Equal(h.t, 1, n)
	})
	// What a rolled-back transaction did leaves the counts as they were.
	before := h.counts(h.exec(), &driver.JobFilter{})
	h.inTx(false, func(ex driver.Executor) {
		h.insertVia(ex, h.jobs(3, "kept_a")...)
		h.claimVia(ex, claimParams(h.at(4*time.Hour), "kept_a", "kept_b"))
		h.requireCountsAgree(ex, "rolled back, in its transaction")
	})
	require.Equal(h.t, before, h.counts(h.exec(), &driver.JobFilter{}), "counts after a rollback")
	h.requireCountsAgree(h.exec(), "after a rollback")
}

// counts returns the Stats counts of f through ex, as a set.
func (h *harness[TTx]) counts(ex driver.Executor, f *driver.JobFilter) map[driver.JobCount]bool {
	h.t.Helper()
	return countSet(h.t, ex, f)
}

// requireCountsAgree is RequireCountsAgree on the harness's jobs.
func (h *harness[TTx]) requireCountsAgree(ex driver.Executor, msg string) {
	h.t.Helper()
	RequireCountsAgree(h.t, ex, h.at(1000*time.Hour), msg)
}

// RequireCountsAgree requires that Stats through ex, for filters on
// statuses, topics and queues alone (which a driver may answer from counts
// it keeps), gives the same counts as for the same filters narrowed by
// createdBefore, a creation time every job meets, which makes a driver
// count the table. A driver's own tests use it after writes the
// conformance suite cannot make, such as SQL written by hand.
func RequireCountsAgree(t testing.TB, ex driver.Executor, createdBefore time.Time, msg string) {
	t.Helper()
	for i, f := range []driver.JobFilter{
		{},
		{Statuses: []driver.JobStatus{driver.StatusPending, driver.StatusProcessing}},
		{Statuses: []driver.JobStatus{driver.StatusCompleted}, Queues: []string{"default"}},
		{Topics: []string{"kept_b"}},
	} {
		counted := f
		counted.CreatedBefore = createdBefore
		require.Equal(t, countSet(t, ex, &counted), countSet(t, ex, &f), fmt.Sprintf("%s: filter %d", msg, i))
	}
}

// countSet returns the Stats counts of f through ex, as a set.
func countSet(t testing.TB, ex driver.Executor, f *driver.JobFilter) map[driver.JobCount]bool {
	t.Helper()
	stats, err := ex.JobStats(context.Background(), &driver.JobStatsParams{Filter: *f, Since: time.Now()})
	require.NoError(t, err, "JobStats")
	got := map[driver.JobCount]bool{}
	for _, c := range stats.Counts {
		require.False(t, got[c], "count %+v repeated", c)
		got[c] = true
	}
	return got
}
