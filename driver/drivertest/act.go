package drivertest

import (
	"slices"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func actCases[TTx any]() []testCase[TTx] {
	return []testCase[TTx]{
		// Cancel makes pending and processing jobs cancelled at once and
		// leaves finished ones; the holder's claim no longer matches.
		{name: "Cancel", twin: true, fn: testActCancel[TTx]},
		// Requeue makes failed and cancelled jobs pending with a fresh
		// retry budget and a record of the requeue.
		{name: "Requeue", twin: true, fn: testActRequeue[TTx]},
		// Delete removes every selected job but processing ones.
		{name: "Delete", twin: true, fn: testActDelete[TTx]},
		// RetryNow makes pending jobs due later due now.
		{name: "RetryNow", twin: true, fn: testActRetryNow[TTx]},
		// Actions select by filter as well as by IDs.
		{name: "ByFilter", twin: true, fn: testActByFilter[TTx]},
		// Held names the jobs a client still holds.
		{name: "Held", twin: true, fn: testActHeld[TTx]},
	}
}

// zoo stores one job of each kind an action tells apart, and returns them
// as stored, by kind: pending (due), later (pending, due in an hour),
// processing (held by client1), completed, failed, cancelled.
func (h *harness[TTx]) zoo() map[string]*driver.JobRow {
	h.t.Helper()
	later := h.newJob()
	later.RunAt = h.at(time.Hour)
	z := map[string]*driver.JobRow{
		"pending":    h.insert(h.newJob())[0],
		"later":      h.insert(later)[0],
		"processing": h.started(client1, nil),
	}
	for _, s := range []driver.JobStatus{driver.StatusCompleted, driver.StatusFailed, driver.StatusCancelled} {
		row := h.started(client1, nil)
		h.finalize(ending(row, s, h.at(time.Second)))
		z[string(s)] = h.get(row.ID)
	}
	return z
}

// zooIDs returns the IDs of every job of z and an ID of no job.
func zooIDs(z map[string]*driver.JobRow) []string {
	ids := []string{newID(), "not-a-uuid"}
	for _, r := range z {
		ids = append(ids, r.ID)
	}
	return ids
}

// act runs op through ex as mode m says and returns its rows.
func (h *harness[TTx]) act(m mode, op func(ex driver.Executor) ([]*driver.JobRow, error)) []*driver.JobRow {
	h.t.Helper()
	var rows []*driver.JobRow
	h.via(m, func(ex driver.Executor) {
		var err error
		rows, err = op(ex)
		require.NoError(h.t, err)
		require.NotNil(h.t, rows)
	})
	return rows
}

// requireActed requires rows to be want, sorted by ID, each as stored
// (unless gone), and the others of z unchanged.
func (h *harness[TTx]) requireActed(z map[string]*driver.JobRow, rows []*driver.JobRow, want map[string]*driver.JobRow, gone bool) {
	h.t.Helper()
	wantRows := sortRows(want)
	require.Equal(h.t, ids(wantRows), ids(rows), "acted-on jobs")
	for i, w := range wantRows {
		requireRow(h.t, w, rows[i])
		if gone {
			h.requireNotFound(w.ID)
		} else {
			h.requireStored(w)
		}
	}
	for kind, r := range z {
		if want[kind] == nil {
			h.requireStored(r)
		}
	}
}

func testActCancel[TTx any](h *harness[TTx], m mode) {
	z := h.zoo()
	now := h.at(2 * time.Second)
	rows := h.act(m, func(ex driver.Executor) ([]*driver.JobRow, error) {
		return ex.JobCancel(h.ctx, &driver.JobActParams{IDs: zooIDs(z), Now: now})
	})
	want := map[string]*driver.JobRow{}
	for _, kind := range []string{"pending", "later", "processing"} {
		w := unlocked(z[kind], driver.StatusCancelled)
		w.FinalizedAt = now
		want[kind] = w
	}
	h.requireActed(z, rows, want, false)
	// The holder's claim no longer matches.
	matched := h.finalizeVia(h.exec(), ending(z["processing"], driver.StatusCompleted, now))
	require.False(h.t, matched[0], "finalize of a cancelled job")
}

func testActRequeue[TTx any](h *harness[TTx], m mode) {
	z := h.zoo()
	now := h.at(2 * time.Second)
	rows := h.act(m, func(ex driver.Executor) ([]*driver.JobRow, error) {
		return ex.JobRequeue(h.ctx, &driver.JobActParams{IDs: zooIDs(z), Now: now, Retries: 2})
	})
	want := map[string]*driver.JobRow{}
	for _, kind := range []string{"failed", "cancelled"} {
		w := cloneRow(z[kind])
		w.Status = driver.StatusPending
		w.RunAt = now
		w.FinalizedAt = time.Time{}
		w.MaxRetries = w.Attempt + 2
		w.Errors = append(w.Errors, driver.AttemptError{Attempt: w.Attempt, At: now, Error: driver.RequeuedError})
		want[kind] = w
	}
	h.requireActed(z, rows, want, false)
}

func testActDelete[TTx any](h *harness[TTx], m mode) {
	z := h.zoo()
	rows := h.act(m, func(ex driver.Executor) ([]*driver.JobRow, error) {
		return ex.JobDelete(h.ctx, &driver.JobActParams{IDs: zooIDs(z), Now: h.at(time.Second)})
	})
	want := map[string]*driver.JobRow{}
	for kind, r := range z {
		if kind != "processing" {
			want[kind] = r
		}
	}
	h.requireActed(z, rows, want, true)
}

func testActRetryNow[TTx any](h *harness[TTx], m mode) {
	z := h.zoo()
	now := h.at(time.Minute)
	rows := h.act(m, func(ex driver.Executor) ([]*driver.JobRow, error) {
		return ex.JobRetryNow(h.ctx, &driver.JobActParams{IDs: zooIDs(z), Now: now})
	})
	w := cloneRow(z["later"])
	w.RunAt = now
	h.requireActed(z, rows, map[string]*driver.JobRow{"later": w}, false)
}

func testActByFilter[TTx any](h *harness[TTx], m mode) {
	z := h.zoo()
	other := h.newJob()
	other.Queue = "other"
	z["other"] = h.insert(other)[0]
	now := h.at(2 * time.Second)
	// Cancel only the pending jobs of queue default.
	rows := h.act(m, func(ex driver.Executor) ([]*driver.JobRow, error) {
		return ex.JobCancel(h.ctx, &driver.JobActParams{Now: now, Filter: driver.JobFilter{
			Queues: []string{"default"}, Statuses: []driver.JobStatus{driver.StatusPending},
		}})
	})
	want := map[string]*driver.JobRow{}
	for _, kind := range []string{"pending", "later"} {
		w := unlocked(z[kind], driver.StatusCancelled)
		w.FinalizedAt = now
		want[kind] = w
	}
	h.requireActed(z, rows, want, false)
	// An empty filter selects every job; an empty ID list none.
	rows = h.act(m, func(ex driver.Executor) ([]*driver.JobRow, error) {
		return ex.JobDelete(h.ctx, &driver.JobActParams{IDs: []string{}, Now: now})
	})
	require.Empty(h.t, rows)
	rows = h.act(m, func(ex driver.Executor) ([]*driver.JobRow, error) {
		return ex.JobDelete(h.ctx, &driver.JobActParams{Now: now})
	})
	require.Len(h.t, rows, len(z)-1, "every job but the processing one")
	h.requireStored(z["processing"])
}

func testActHeld[TTx any](h *harness[TTx], m mode) {
	z := h.zoo()
	mine2 := h.started(client1, nil)
	theirs := h.started(client2, nil)
	var held []string
	h.via(m, func(ex driver.Executor) {
		var err error
		held, err = ex.JobHeld(h.ctx, &driver.JobHeldParams{
			ClientID: client1, IDs: append(zooIDs(z), mine2.ID, theirs.ID),
		})
		require.NoError(h.t, err)
	})
	require.Equal(h.t, ids(sortRows(map[string]*driver.JobRow{"a": z["processing"], "b": mine2})), held)
}

// sortRows returns the rows of m sorted by ID.
func sortRows(m map[string]*driver.JobRow) []*driver.JobRow {
	out := make([]*driver.JobRow, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *driver.JobRow) int { return strings.Compare(a.ID, b.ID) })
	return out
}
