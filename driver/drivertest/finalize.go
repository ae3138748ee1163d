package drivertest

import (
	"fmt"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func finalizeCases[TTx any]() []testCase[TTx] {
	return []testCase[TTx]{
		// Completed, failed and cancelled set FinalizedAt, clear the claim
		// and ignore RunAt.
		{name: "Final", twin: true, fn: testFinalizeFinal[TTx]},
		// Pending (a retry) sets RunAt, clears the claim, keeps Attempt and
		// ignores FinalizedAt; the next claim is the next attempt.
		{name: "Retry", twin: true, fn: testFinalizeRetry[TTx]},
		// A snooze gives the attempt back.
		{name: "Snooze", twin: true, fn: testFinalizeSnooze[TTx]},
		// Errors are appended oldest first, every field round-tripping.
		{name: "Errors", twin: true, fn: testFinalizeErrors[TTx]},
		// Only the newest MaxErrorsKept errors are kept.
		{name: "ErrorsBounded", fn: testFinalizeErrorsBounded[TTx]},
		// A Result is stored as JSON; without one the job has none.
		{name: "Result", twin: true, fn: testFinalizeResult[TTx]},
		// An item for another claim matches nothing and changes nothing.
		{name: "Fencing", twin: true, fn: testFinalizeFencing[TTx]},
		// The claim of a rescued job cannot be finalized, neither before
		// nor after another client claims the job again.
		{name: "FencingRescued", twin: true, fn: testFinalizeFencingRescued[TTx]},
		// A batch reports, in order, which items matched; an item matches
		// only its claim's ID, Attempt, LockedBy and AttemptedAt.
		{name: "Batch", twin: true, fn: testFinalizeBatch[TTx]},
		// A batch that names a claim twice ends it once: one of the two
		// items matches, and its outcome is stored. A cancelled end with a
		// result is stored as it would be alone.
		{name: "BatchSameClaimTwice", twin: true, fn: testFinalizeBatchSameClaimTwice[TTx]},
		// Finalizing in a transaction that rolls back leaves the claim.
		{name: "Rollback", fn: testFinalizeRollback[TTx]},
		// Delete deletes a job whose item matched with a final status,
		// counted out of the kept counts, its inserts kept; a retry or an
		// item that matches no claim deletes nothing.
		{name: "Delete", twin: true, fn: testFinalizeDelete[TTx]},
	}
}

// finalizeMode finalizes items through mode m and returns the flags.
func finalizeMode[TTx any](h *harness[TTx], m mode, items ...*driver.JobFinalize) []bool {
	h.t.Helper()
	var matched []bool
	h.via(m, func(ex driver.Executor) { matched = h.finalizeVia(ex, items...) })
	return matched
}

func testFinalizeFinal[TTx any](h *harness[TTx], m mode) {
	for _, status := range []driver.JobStatus{driver.StatusCompleted, driver.StatusFailed, driver.StatusCancelled} {
		row := h.started(client1, nil)
		item := ending(row, status, h.at(2*time.Second))
		item.RunAt = h.at(99 * time.Hour) // ignored: the status is final
		before := *item
		matched := finalizeMode(h, m, item)
		require.Equal(h.t, []bool{true}, matched, "finalize %s", status)
		require.Equal(h.t, before, *item, "JobFinalize modified its params")
		want := unlocked(row, status)
		want.FinalizedAt = h.at(2 * time.Second)
		h.requireStored(want)
	}
}

func testFinalizeRetry[TTx any](h *harness[TTx], m mode) {
	row := h.started(client1, nil)
	e := &driver.AttemptError{Attempt: 1, At: h.at(3 * time.Second), Error: "boom"}
	item := retrying(row, h.at(10*time.Minute), e)
	item.FinalizedAt = h.at(time.Second) // ignored: the status is not final
	require.Equal(h.t, []bool{true}, finalizeMode(h, m, item))

	want := unlocked(row, driver.StatusPending)
	want.RunAt = h.at(10 * time.Minute)
	want.Errors = []driver.AttemptError{*e}
	h.requireStored(want)

	// Not due before its new RunAt; then claimed as attempt 2.
	require.Empty(h.t, h.claimVia(h.exec(), claimParams(h.at(10*time.Minute-time.Microsecond), row.Topic)))
	again := h.claimJob(want, client2, h.at(10*time.Minute), h.at(11*time.Minute))
	requireRow(h.t, claimedRow(want, client2, h.at(10*time.Minute), h.at(11*time.Minute)), again)
	require.Equal(h.t, 2, again.Attempt, "Attempt of the retry")
}

func testFinalizeSnooze[TTx any](h *harness[TTx], m mode) {
	row := h.started(client1, nil)
	item := retrying(row, h.at(5*time.Minute), nil)
	item.Snooze = true
	require.Equal(h.t, []bool{true}, finalizeMode(h, m, item))

	want := unlocked(row, driver.StatusPending)
	want.RunAt = h.at(5 * time.Minute)
	want.MaxRetries++
	h.requireStored(want)

	// Attempt never decreases, so the old claim's fence cannot match the
	// new claim, even by the same client.
	again := h.claimJob(want, client1, h.at(5*time.Minute), h.at(6*time.Minute))
	require.Equal(h.t, 2, again.Attempt, "Attempt after a snooze")
	stale := ending(row, driver.StatusCompleted, h.at(7*time.Minute))
	require.Equal(h.t, []bool{false}, h.finalizeVia(h.exec(), stale), "the snoozed claim's fence")
}

func testFinalizeErrors[TTx any](h *harness[TTx], m mode) {
	row := h.started(client1, nil)
	e1 := &driver.AttemptError{
		Attempt: 1, At: h.at(time.Second + time.Microsecond).In(time.FixedZone("UTC+01:00", 3600)),
		Error: "first: \"quoted\"\nsecond line \u2713",
		Trace: "goroutine 7 [running]:\nmain.work(...)\n\t/src/main.go:42 +0x1d",
	}
	require.Equal(h.t, []bool{true}, finalizeMode(h, m, retrying(row, h.at(time.Minute), e1)))
	row = h.claimJob(h.get(row.ID), client1, h.at(time.Minute), h.at(2*time.Minute))

	e2 := &driver.AttemptError{Attempt: 2, At: h.at(time.Minute + time.Second), Error: "second"}
	item := ending(row, driver.StatusFailed, h.at(time.Minute+2*time.Second))
	item.Error = e2
	require.Equal(h.t, []bool{true}, finalizeMode(h, m, item))

	want := unlocked(row, driver.StatusFailed)
	want.FinalizedAt = item.FinalizedAt
	want.Errors = []driver.AttemptError{*e1, *e2}
	h.requireStored(want)
}

func testFinalizeErrorsBounded[TTx any](h *harness[TTx], _ mode) {
	const runs = driver.MaxErrorsKept + 5
	j := h.newJob()
	j.MaxRetries = 2 * runs
	row := h.started(client1, j)
	var all []driver.AttemptError
	for i := 1; i <= runs; i++ {
		require.Equal(h.t, i, row.Attempt, "attempt")
		at := h.at(time.Duration(i) * time.Minute)
		e := driver.AttemptError{Attempt: i, At: at, Error: fmt.Sprintf("error %d", i)}
		all = append(all, e)
		h.finalize(retrying(row, at, &e))
		if i < runs {
			row = h.claimJob(h.get(row.ID), client1, at, at.Add(time.Minute))
		}
	}
	got := h.get(row.ID)
	requireErrors(h.t, all[runs-driver.MaxErrorsKept:], got.Errors, "Errors")
	require.Equal(h.t, runs-driver.MaxErrorsKept+1, got.Errors[0].Attempt, "oldest error kept")
}

func testFinalizeResult[TTx any](h *harness[TTx], m mode) {
	with, without := h.started(client1, nil), h.started(client1, nil)
	item := ending(with, driver.StatusCompleted, h.at(time.Second))
	item.Result = []byte(`{"sent": 3, "ids": ["x", "y"], "note": "d\u00e9j\u00e0"}`)
	require.Equal(h.t, []bool{true, true}, finalizeMode(h, m, item, ending(without, driver.StatusCompleted, h.at(time.Second))))

	want := unlocked(with, driver.StatusCompleted)
	want.FinalizedAt = h.at(time.Second)
	want.Result = item.Result
	h.requireStored(want)
	want = unlocked(without, driver.StatusCompleted)
	want.FinalizedAt = h.at(time.Second)
	h.requireStored(want)
}

// mismatches returns items that name a claim other than row's, each with an
// error and a result that must not be stored.
func mismatches(row *driver.JobRow, at time.Time) []*driver.JobFinalize {
	var items []*driver.JobFinalize
	for _, claim := range []struct {
		id       string
		attempt  int
		lockedBy string
	}{
		{row.ID, row.Attempt + 1, row.LockedBy},
		{row.ID, row.Attempt - 1, row.LockedBy},
		{row.ID, row.Attempt, row.LockedBy + "-other"},
		{row.ID, row.Attempt, ""},
		{newID(), row.Attempt, row.LockedBy},
	} {
		item := ending(row, driver.StatusCompleted, at)
		item.ID, item.Attempt, item.LockedBy = claim.id, claim.attempt, claim.lockedBy
		item.Error = &driver.AttemptError{Attempt: claim.attempt, At: at, Error: "fenced"}
		item.Result = []byte(`{"fenced": true}`)
		items = append(items, item)
	}
	return items
}

func testFinalizeFencing[TTx any](h *harness[TTx], m mode) {
	row := h.started(client1, nil)
	for i, item := range mismatches(row, h.at(time.Second)) {
		require.Equal(h.t, []bool{false}, finalizeMode(h, m, item), "mismatched item %d", i)
		h.requireStored(row)
	}

	// A claim that has already ended cannot end again.
	h.finalize(ending(row, driver.StatusCompleted, h.at(2*time.Second)))
	done := unlocked(row, driver.StatusCompleted)
	done.FinalizedAt = h.at(2 * time.Second)
	for _, status := range []driver.JobStatus{driver.StatusFailed, driver.StatusPending, driver.StatusCompleted} {
		item := ending(row, status, h.at(3*time.Second))
		item.RunAt = h.at(time.Hour)
		item.Error = &driver.AttemptError{Attempt: row.Attempt, At: h.at(3 * time.Second), Error: "late"}
		require.Equal(h.t, []bool{false}, finalizeMode(h, m, item), "finalize a completed job as %s", status)
		h.requireStored(done)
	}
}

func testFinalizeFencingRescued[TTx any](h *harness[TTx], m mode) {
	row := h.started(client1, nil)
	rescueErr := driver.AttemptError{At: h.at(2 * time.Minute), Error: "lease expired"}
	rescued := h.rescueVia(h.exec(), &driver.JobRescueParams{Now: h.at(2 * time.Minute), Error: rescueErr, Limit: 10})
	require.Equal(h.t, []string{row.ID}, ids(rescued), "rescued")
	pending := h.get(row.ID)
	require.Equal(h.t, driver.StatusPending, pending.Status, "rescued job")

	late := ending(row, driver.StatusCompleted, h.at(3*time.Minute))
	require.Equal(h.t, []bool{false}, finalizeMode(h, m, late), "finalize a rescued claim")
	h.requireStored(pending)

	again := h.claimJob(pending, client2, h.at(3*time.Minute), h.at(4*time.Minute))
	require.Equal(h.t, 2, again.Attempt, "Attempt of the new claim")
	stale := []*driver.JobFinalize{
		late,
		ending(&driver.JobRow{ID: row.ID, Attempt: 2, LockedBy: client1}, driver.StatusCompleted, h.at(5*time.Minute)),
		ending(&driver.JobRow{ID: row.ID, Attempt: 1, LockedBy: client2}, driver.StatusCompleted, h.at(5*time.Minute)),
	}
	for i, item := range stale {
		require.Equal(h.t, []bool{false}, finalizeMode(h, m, item), "stale item %d", i)
		h.requireStored(again)
	}
	require.Equal(h.t, []bool{true}, finalizeMode(h, m, ending(again, driver.StatusCompleted, h.at(5*time.Minute))))
}

func testFinalizeBatch[TTx any](h *harness[TTx], m mode) {
	a, b, c := h.started(client1, nil), h.started(client1, nil), h.started(client1, nil)
	d := h.started(client2, nil)
	wrongAttempt := ending(b, driver.StatusCompleted, h.at(time.Second))
	wrongAttempt.Attempt = 2
	wrongClient := ending(d, driver.StatusCompleted, h.at(time.Second))
	wrongClient.LockedBy = client1
	unknown := ending(a, driver.StatusCompleted, h.at(time.Second))
	unknown.ID = newID()
	// The same claim but for its time: a claim the database forgot,
	// whose job the same client claimed again at the same attempt.
	e := h.started(client1, nil)
	wrongTime := ending(e, driver.StatusCompleted, h.at(time.Second))
	wrongTime.AttemptedAt = e.AttemptedAt.Add(-time.Microsecond)

	matched := finalizeMode(h, m,
		ending(a, driver.StatusCompleted, h.at(time.Second)),
		wrongAttempt,
		retrying(c, h.at(time.Hour), nil),
		unknown,
		wrongClient,
		wrongTime,
	)
	require.Equal(h.t, []bool{true, false, true, false, false, false}, matched)

	wantA := unlocked(a, driver.StatusCompleted)
	wantA.FinalizedAt = h.at(time.Second)
	h.requireStored(wantA)
	h.requireStored(b)
	wantC := unlocked(c, driver.StatusPending)
	wantC.RunAt = h.at(time.Hour)
	h.requireStored(wantC)
	h.requireStored(d)
	h.requireStored(e)
	h.requireNotFound(unknown.ID)
}

func testFinalizeBatchSameClaimTwice[TTx any](h *harness[TTx], m mode) {
	a, b, c := h.started(client1, nil), h.started(client1, nil), h.started(client1, nil)
	staleB := ending(b, driver.StatusCompleted, h.at(time.Second))
	staleB.Attempt++
	cancelB := ending(b, driver.StatusCancelled, h.at(3*time.Second))
	cancelB.Result = []byte(`{"why": "stopped"}`)
	items := []*driver.JobFinalize{
		ending(a, driver.StatusFailed, h.at(time.Second)),
		staleB,
		ending(a, driver.StatusCompleted, h.at(2*time.Second)),
		ending(c, driver.StatusCompleted, h.at(4*time.Second)),
		cancelB,
		retrying(c, h.at(time.Hour), &driver.AttemptError{Attempt: c.Attempt, At: h.at(time.Second), Error: "late"}),
	}
	matched := finalizeMode(h, m, items...)
	require.Len(h.t, matched, len(items))
	require.Equal(h.t, []bool{false, true}, []bool{matched[1], matched[4]}, "b: only the item of its claim matches")
	wantB := unlocked(b, driver.StatusCancelled)
	wantB.FinalizedAt = h.at(3 * time.Second)
	wantB.Result = cancelB.Result
	h.requireStored(wantB)

	// Of two items of the same claim, one matches and its outcome is stored.
	for _, pair := range [][2]int{{0, 2}, {3, 5}} {
		require.NotEqual(h.t, matched[pair[0]], matched[pair[1]], "items %v: exactly one matches", pair)
		it := items[pair[0]]
		if matched[pair[1]] {
			it = items[pair[1]]
		}
		row := a
		if it.ID == c.ID {
			row = c
		}
		want := unlocked(row, it.Status)
		if it.Status == driver.StatusPending {
			want.RunAt = it.RunAt
			want.Errors = []driver.AttemptError{*it.Error}
		} else {
			want.FinalizedAt = it.FinalizedAt
		}
		h.requireStored(want)
	}
}

func testFinalizeRollback[TTx any](h *harness[TTx], _ mode) {
	row := h.started(client1, nil)
	item := ending(row, driver.StatusCompleted, h.at(time.Second))
	item.Error = &driver.AttemptError{Attempt: 1, At: h.at(time.Second), Error: "rolled back"}
	item.Result = []byte(`{"rolled": "back"}`)
	h.inTx(false, func(ex driver.Executor) {
		require.Equal(h.t, []bool{true}, h.finalizeVia(ex, item))
		require.Equal(h.t, driver.StatusCompleted, h.getVia(ex, row.ID).Status, "finalized in the transaction")
	})
	h.requireStored(row)
	h.finalize(item)
}

func testFinalizeDelete[TTx any](h *harness[TTx], m mode) {
	topic := "del_" + newID()[:8]
	h.insert(h.jobs(6, topic)...)
	rows := h.claimVia(h.exec(), claimParams(h.base, topic))
	require.Len(h.t, rows, 6)
	at := h.at(time.Second)
	done, failed, retry, fenced, notified := ending(rows[0], driver.StatusCompleted, at),
		ending(rows[1], driver.StatusFailed, at), retrying(rows[2], h.at(time.Hour), nil),
		ending(rows[3], driver.StatusCancelled, at), ending(rows[4], driver.StatusCompleted, at)
	fenced.Attempt++
	// A plain completion of another claim: a driver may delete plain
	// completions without updating them first, fenced all the same.
	fencedDone := ending(rows[5], driver.StatusCompleted, at)
	fencedDone.AttemptedAt = fencedDone.AttemptedAt.Add(time.Millisecond)
	note := h.newJob()
	notified.Insert = []*driver.JobInsert{note}
	for _, it := range []*driver.JobFinalize{done, failed, retry, fenced, notified, fencedDone} {
		it.Delete = true
	}
	require.Equal(h.t, []bool{true, true, true, false, true, false},
		finalizeMode(h, m, done, failed, retry, fenced, notified, fencedDone))
	require.Equal(h.t, driver.StatusProcessing, h.get(rows[5].ID).Status, "a completion of another claim deletes nothing")
	h.requireNotFound(rows[0].ID)
	h.requireNotFound(rows[1].ID)
	h.requireNotFound(rows[4].ID)
	require.Equal(h.t, driver.StatusPending, h.get(rows[2].ID).Status, "a retry is not deleted")
	require.Equal(h.t, driver.StatusProcessing, h.get(rows[3].ID).Status, "an item of another claim deletes nothing")
	require.Equal(h.t, driver.StatusPending, h.get(note.ID).Status, "the outcome's insert is kept")
	st := h.statsVia(h.exec(), &driver.JobStatsParams{Filter: driver.JobFilter{Topics: []string{topic}}, Since: h.base})
	counts := map[driver.JobStatus]int{}
	for _, c := range st.Counts {
		counts[c.Status] += c.Count
	}
	require.Equal(h.t, 1, counts[driver.StatusPending], "kept counts")
	require.Equal(h.t, 2, counts[driver.StatusProcessing], "kept counts")
	require.Zero(h.t, counts[driver.StatusCompleted]+counts[driver.StatusFailed], "kept counts")
}
