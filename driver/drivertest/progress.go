package drivertest

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func progressCases[TTx any]() []testCase[TTx] {
	return []testCase[TTx]{
		// Progress is set on a job processing under the claim, with the
		// claim's attempt and its time in UTC to the microsecond; a later
		// update replaces it; nothing else changes.
		{name: "Set", twin: true, fn: testProgressSet[TTx]},
		// An item for another claim, or for a job that is not processing,
		// matches nothing and changes nothing; a batch reports, in order,
		// which items matched.
		{name: "Fencing", twin: true, fn: testProgressFencing[TTx]},
		// Progress is kept when the attempt ends and when the job is
		// claimed again, and is listed.
		{name: "Kept", twin: true, fn: testProgressKept[TTx]},
		// Progress set in a transaction that rolls back is not stored.
		{name: "Rollback", fn: testProgressRollback[TTx]},
	}
}

// progressing returns an update of row's claim to percent and message at
// at. Its Progress.Attempt is one the driver must ignore.
func progressing(row *driver.JobRow, percent float64, message string, at time.Time) *driver.JobProgressUpdate {
	return &driver.JobProgressUpdate{
		ID: row.ID, Attempt: row.Attempt, LockedBy: row.LockedBy,
		Progress: driver.JobProgress{Attempt: 99, Percent: percent, Message: message, At: at},
	}
}

// progressMode sets progress through mode m and returns the matched flags.
func progressMode[TTx any](h *harness[TTx], m mode, items ...*driver.JobProgressUpdate) []bool {
	h.t.Helper()
	var matched []bool
	h.via(m, func(ex driver.Executor) {
		var err error
		matched, err = ex.JobProgress(h.ctx, &driver.JobProgressParams{Jobs: items})
		require.NoError(h.t, err, "JobProgress")
	})
	require.Len(h.t, matched, len(items), "JobProgress results")
	return matched
}

// withProgress returns a copy of row with the progress of u stored.
func withProgress(row *driver.JobRow, u *driver.JobProgressUpdate) *driver.JobRow {
	w := cloneRow(row)
	p := u.Progress
	p.Attempt = u.Attempt
	w.Progress = &p
	return w
}

func testProgressSet[TTx any](h *harness[TTx], m mode) {
	row := h.started(client1, nil)
	other := h.started(client1, nil)
	first := progressing(row, 12.5, "copying \"files\" \u2713", h.at(time.Second+time.Microsecond).In(time.FixedZone("X", 3600)))
	before := *first
	require.Equal(h.t, []bool{true}, progressMode(h, m, first))
	require.Equal(h.t, before, *first, "JobProgress modified its params")
	h.requireStored(withProgress(row, first))
	h.requireStored(other)

	second := progressing(row, 100, "", h.at(2*time.Second))
	require.Equal(h.t, []bool{true}, progressMode(h, m, second))
	h.requireStored(withProgress(row, second))
}

func testProgressFencing[TTx any](h *harness[TTx], m mode) {
	row := h.started(client1, nil)
	done := h.started(client1, nil)
	h.finalize(ending(done, driver.StatusCompleted, h.at(time.Second)))
	done = h.get(done.ID)
	pending := h.insert(h.newJob())[0]
	at := h.at(2 * time.Second)

	good := progressing(row, 40, "good", at)
	otherClient := progressing(row, 1, "other client", at)
	otherClient.LockedBy = client2
	otherAttempt := progressing(row, 2, "other attempt", at)
	otherAttempt.Attempt = 2
	finished := progressing(done, 3, "finished", at)
	finished.LockedBy = client1
	notClaimed := progressing(pending, 4, "pending", at)
	unknown := progressing(&driver.JobRow{ID: newID(), Attempt: 1, LockedBy: client1}, 5, "unknown", at)
	notUUID := progressing(&driver.JobRow{ID: "not-a-uuid", Attempt: 1, LockedBy: client1}, 6, "not a UUID", at)

	matched := progressMode(h, m, otherClient, otherAttempt, finished, good, notClaimed, unknown, notUUID)
	require.Equal(h.t, []bool{false, false, false, true, false, false, false}, matched)
	h.requireStored(withProgress(row, good))
	h.requireStored(done)
	h.requireStored(pending)
	h.requireNotFound(unknown.ID)
}

func testProgressKept[TTx any](h *harness[TTx], m mode) {
	row := h.started(client1, nil)
	u := progressing(row, 75, "almost", h.at(time.Second))
	require.Equal(h.t, []bool{true}, progressMode(h, m, u))

	// A retry, and the next attempt's claim, keep the first attempt's
	// progress, which says which attempt it belongs to.
	h.finalize(retrying(row, h.at(time.Minute), nil))
	want := withProgress(unlocked(row, driver.StatusPending), u)
	want.RunAt = h.at(time.Minute)
	h.requireStored(want)
	again := h.claimJob(want, client2, h.at(time.Minute), h.at(2*time.Minute))
	requireRow(h.t, claimedRow(want, client2, h.at(time.Minute), h.at(2*time.Minute)), again)

	h.finalize(ending(again, driver.StatusCompleted, h.at(time.Minute+time.Second)))
	want = unlocked(again, driver.StatusCompleted)
	want.FinalizedAt = h.at(time.Minute + time.Second)
	h.requireStored(want)
	require.Equal(h.t, 1, want.Progress.Attempt, "the progress of attempt 1")
	listed := h.listVia(h.exec(), &driver.JobListParams{Filter: driver.JobFilter{Topics: []string{row.Topic}}, Limit: 10})
	require.Len(h.t, listed.Jobs, 1)
	requireRow(h.t, want, listed.Jobs[0])
}

func testProgressRollback[TTx any](h *harness[TTx], _ mode) {
	row := h.started(client1, nil)
	h.inTx(false, func(ex driver.Executor) {
		matched, err := ex.JobProgress(h.ctx, &driver.JobProgressParams{Jobs: []*driver.JobProgressUpdate{
			progressing(row, 50, "rolled back", h.at(time.Second)),
		}})
		require.NoError(h.t, err, "JobProgress")
		require.Equal(h.t, []bool{true}, matched)
	})
	h.requireStored(row)
}
