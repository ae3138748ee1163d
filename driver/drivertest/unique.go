package drivertest

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func uniqueCases[TTx any]() []testCase[TTx] {
	return []testCase[TTx]{
		// A job with the UniqueKey of a pending job, whatever its queue and
		// topic, is not inserted: the pending job comes back as Duplicate.
		{name: "Pending", twin: true, fn: testUniquePending[TTx]},
		// The same while the first job is processing, and while it waits
		// for a retry.
		{name: "Processing", twin: true, fn: testUniqueProcessing[TTx]},
		// Once the first job is completed, failed or cancelled, its key is
		// free again.
		{name: "AfterFinal", twin: true, fn: testUniqueAfterFinal[TTx]},
		// Jobs of one batch with the same key behave as if inserted one
		// after the other.
		{name: "SameBatch", twin: true, fn: testUniqueSameBatch[TTx]},
		// A transaction sees the unique job it inserted itself.
		{name: "SameTx", fn: testUniqueSameTx[TTx]},
		// Jobs without a UniqueKey are never duplicates.
		{name: "EmptyKey", twin: true, fn: testUniqueEmptyKey[TTx]},
		// A unique job inserted in a transaction that rolls back does not
		// hold its key.
		{name: "Rollback", fn: testUniqueRollback[TTx]},
	}
}

// requireDuplicate requires res to be a duplicate whose job is want.
func requireDuplicate[TTx any](h *harness[TTx], want *driver.JobRow, res driver.JobInsertResult) {
	h.t.Helper()
	require.True(h.t, res.Duplicate, "want a duplicate of job %s", want.ID)
	requireRow(h.t, want, res.Job)
}

func testUniquePending[TTx any](h *harness[TTx], m mode) {
	a := h.newJob()
	a.UniqueKey = "key-" + newID()
	rowA := h.insert(a)[0]

	b := h.newJob()
	b.UniqueKey = a.UniqueKey
	b.Queue = "other"
	b.Payload = []byte(`{"other": true}`)
	var res []driver.JobInsertResult
	h.via(m, func(ex driver.Executor) { res = h.insertVia(ex, b) })
	requireDuplicate(h, rowA, res[0])
	h.requireNotFound(b.ID)
	h.requireStored(rowA)
}

func testUniqueProcessing[TTx any](h *harness[TTx], m mode) {
	a := h.newJob()
	a.UniqueKey = "key-" + newID()
	claimed := h.started(client1, a)

	b := h.newJob()
	b.UniqueKey = a.UniqueKey
	var res []driver.JobInsertResult
	h.via(m, func(ex driver.Executor) { res = h.insertVia(ex, b) })
	requireDuplicate(h, claimed, res[0])
	h.requireNotFound(b.ID)

	// Waiting for a retry, the job is pending again and still holds its key.
	h.finalize(retrying(claimed, h.at(time.Hour), nil))
	retried := unlocked(claimed, driver.StatusPending)
	retried.RunAt = h.at(time.Hour)
	h.via(m, func(ex driver.Executor) { res = h.insertVia(ex, b) })
	requireDuplicate(h, retried, res[0])
	h.requireNotFound(b.ID)
}

func testUniqueAfterFinal[TTx any](h *harness[TTx], m mode) {
	for _, status := range []driver.JobStatus{driver.StatusCompleted, driver.StatusFailed, driver.StatusCancelled} {
		a := h.newJob()
		a.UniqueKey = "key-" + string(status) + "-" + newID()
		claimed := h.started(client1, a)
		h.finalize(ending(claimed, status, h.at(time.Second)))
		final := unlocked(claimed, status)
		final.FinalizedAt = h.at(time.Second)

		b := h.newJob()
		b.UniqueKey = a.UniqueKey
		var res []driver.JobInsertResult
		h.via(m, func(ex driver.Executor) { res = h.insertVia(ex, b) })
		require.False(h.t, res[0].Duplicate, "a %s job's key is free", status)
		requireRow(h.t, pendingRow(b), res[0].Job)
		h.requireStored(pendingRow(b))
		h.requireStored(final)

		// The new job holds the key now.
		c := h.newJob()
		c.UniqueKey = a.UniqueKey
		h.via(m, func(ex driver.Executor) { res = h.insertVia(ex, c) })
		requireDuplicate(h, pendingRow(b), res[0])
		h.requireNotFound(c.ID)
	}
}

func testUniqueSameBatch[TTx any](h *harness[TTx], m mode) {
	t := h.t
	key1, key2 := "key-"+newID(), "key-"+newID()
	jobs := []*driver.JobInsert{h.newJob(), h.newJob(), h.newJob(), h.newJob(), h.newJob()}
	jobs[0].UniqueKey = key1
	jobs[1].UniqueKey = key1
	jobs[2].UniqueKey = key2
	jobs[4].UniqueKey = key1
	var res []driver.JobInsertResult
	h.via(m, func(ex driver.Executor) { res = h.insertVia(ex, jobs...) })

	for _, i := range []int{0, 2, 3} {
		require.False(t, res[i].Duplicate, "result %d: Duplicate", i)
		requireRow(t, pendingRow(jobs[i]), res[i].Job)
		h.requireStored(pendingRow(jobs[i]))
	}
	for _, i := range []int{1, 4} {
		requireDuplicate(h, pendingRow(jobs[0]), res[i])
		h.requireNotFound(jobs[i].ID)
	}
}

func testUniqueSameTx[TTx any](h *harness[TTx], _ mode) {
	a, b := h.newJob(), h.newJob()
	a.UniqueKey = "key-" + newID()
	b.UniqueKey = a.UniqueKey
	h.inTx(true, func(ex driver.Executor) {
		res := h.insertVia(ex, a)
		require.False(h.t, res[0].Duplicate, "first job with the key")
		res = h.insertVia(ex, b)
		requireDuplicate(h, pendingRow(a), res[0])
	})
	h.requireStored(pendingRow(a))
	h.requireNotFound(b.ID)
}

func testUniqueEmptyKey[TTx any](h *harness[TTx], m mode) {
	a := h.newJob()
	h.insert(a)
	b, c := h.newJob(), h.newJob()
	for _, j := range []*driver.JobInsert{b, c} {
		j.Topic = a.Topic
		j.Payload = a.Payload
	}
	var res []driver.JobInsertResult
	h.via(m, func(ex driver.Executor) { res = h.insertVia(ex, b, c) })
	for i, j := range []*driver.JobInsert{b, c} {
		require.False(h.t, res[i].Duplicate, "result %d: a job without a key is never a duplicate", i)
		requireRow(h.t, pendingRow(j), res[i].Job)
	}
	for _, j := range []*driver.JobInsert{a, b, c} {
		h.requireStored(pendingRow(j))
	}
}

func testUniqueRollback[TTx any](h *harness[TTx], _ mode) {
	a, b := h.newJob(), h.newJob()
	a.UniqueKey = "key-" + newID()
	b.UniqueKey = a.UniqueKey
	h.inTx(false, func(ex driver.Executor) {
		res := h.insertVia(ex, a)
		require.False(h.t, res[0].Duplicate, "first job with the key")
	})
	h.insert(b)
	h.requireNotFound(a.ID)
	h.requireStored(pendingRow(b))
}
