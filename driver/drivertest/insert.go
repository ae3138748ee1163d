package drivertest

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func insertCases[TTx any]() []testCase[TTx] {
	return []testCase[TTx]{
		// Every field of an inserted job is stored as given and read back
		// exactly; the params are not modified.
		{name: "RoundTrip", twin: true, fn: testInsertRoundTrip[TTx]},
		// Times given in any location are stored as instants and returned
		// in UTC.
		{name: "TimeZones", twin: true, fn: testInsertTimeZones[TTx]},
		// A batch is inserted whole, with results in input order.
		{name: "Batch", twin: true, fn: testInsertBatch[TTx]},
		// An empty batch inserts nothing and returns no results.
		{name: "Empty", twin: true, fn: testInsertEmpty[TTx]},
		// A batch that fails part way (a duplicate ID) inserts nothing.
		{name: "AtomicOnError", fn: testInsertAtomic[TTx]},
		// A job inserted in a transaction that rolls back never exists.
		{name: "Rollback", fn: testInsertRollback[TTx]},
	}
}

func testInsertRoundTrip[TTx any](h *harness[TTx], m mode) {
	t := h.t
	j := &driver.JobInsert{
		ID:       newID(),
		Topic:    "mail_digest",
		Queue:    "mail",
		Priority: 7,
		Payload: []byte(`{"to":   "a@b.c", "n": 42, "text": "h\u00e9llo \u2713 \"q\"",
			"nested": {"list": [1, 2.5, "x", null], "ok": true, "empty": {}}}`),
		MaxRetries: 5,
		RunAt:      h.at(time.Hour + 7*time.Microsecond),
		CreatedAt:  h.at(-time.Minute),
		UniqueKey:  "mail:a@b.c",
	}
	before := cloneInsert(j)
	var res []driver.JobInsertResult
	h.via(m, func(ex driver.Executor) { res = h.insertVia(ex, j) })
	require.Equal(t, before, j, "JobInsertMany modified its params")
	require.False(t, res[0].Duplicate, "Duplicate")
	want := pendingRow(j)
	requireRow(t, want, res[0].Job)
	h.requireStored(want)
}

func testInsertTimeZones[TTx any](h *harness[TTx], m mode) {
	east := time.FixedZone("UTC+05:30", 5*3600+1800)
	west := time.FixedZone("UTC-07:00", -7*3600)
	j := h.newJob()
	j.RunAt = h.at(time.Minute).In(east)
	j.CreatedAt = h.at(-time.Minute).In(west)
	var res []driver.JobInsertResult
	h.via(m, func(ex driver.Executor) { res = h.insertVia(ex, j) })
	want := pendingRow(j)
	requireRow(h.t, want, res[0].Job)
	h.requireStored(want)
}

func testInsertBatch[TTx any](h *harness[TTx], m mode) {
	t := h.t
	jobs := make([]*driver.JobInsert, 6)
	for i := range jobs {
		jobs[i] = h.newJob()
		jobs[i].Priority = (i * 3) % 5
		jobs[i].RunAt = h.at(time.Duration(i) * time.Second)
		jobs[i].MaxRetries = i
	}
	jobs[1].Queue = "other"
	jobs[2].Topic = jobs[0].Topic
	jobs[3].UniqueKey = "batch-unique-" + newID()
	jobs[4].Payload = []byte(`[1, "two", {"three": 3}]`)
	var res []driver.JobInsertResult
	h.via(m, func(ex driver.Executor) { res = h.insertVia(ex, jobs...) })
	for i, j := range jobs {
		require.False(t, res[i].Duplicate, "result %d: Duplicate", i)
		require.NotNil(t, res[i].Job, "result %d", i)
		require.Equal(t, j.ID, res[i].Job.ID, "result %d is not for job %d", i, i)
		requireRow(t, pendingRow(j), res[i].Job)
		h.requireStored(pendingRow(j))
	}
}

func testInsertEmpty[TTx any](h *harness[TTx], m mode) {
	h.via(m, func(ex driver.Executor) {
		for _, jobs := range [][]*driver.JobInsert{nil, {}} {
			res, err := ex.JobInsertMany(h.ctx, &driver.JobInsertManyParams{Jobs: jobs})
			require.NoError(h.t, err, "JobInsertMany of no jobs")
			require.Empty(h.t, res, "JobInsertMany of no jobs")
		}
	})
}

func testInsertAtomic[TTx any](h *harness[TTx], _ mode) {
	t := h.t
	existing := h.newJob()
	existingRow := h.insert(existing)[0]

	// The duplicate ID is the third job of the batch, so a driver that
	// inserts row by row has written two rows when it fails.
	a, b := h.newJob(), h.newJob()
	clash := h.newJob()
	clash.ID = existing.ID
	_, err := h.exec().JobInsertMany(h.ctx, &driver.JobInsertManyParams{Jobs: []*driver.JobInsert{a, b, clash}})
	require.Error(t, err, "inserting a job with an existing ID")
	h.requireNotFound(a.ID)
	h.requireNotFound(b.ID)
	requireRow(t, pendingRow(existing), existingRow)
	h.requireStored(existingRow)

	// The same with the clash inside the batch itself.
	c, d := h.newJob(), h.newJob()
	clash = h.newJob()
	clash.ID = c.ID
	_, err = h.exec().JobInsertMany(h.ctx, &driver.JobInsertManyParams{Jobs: []*driver.JobInsert{c, d, clash}})
	require.Error(t, err, "inserting two jobs with the same ID")
	h.requireNotFound(c.ID)
	h.requireNotFound(d.ID)

	// In a transaction the caller rolls back after the error.
	e := h.newJob()
	clash = h.newJob()
	clash.ID = e.ID
	h.inTx(false, func(ex driver.Executor) {
		_, err := ex.JobInsertMany(h.ctx, &driver.JobInsertManyParams{Jobs: []*driver.JobInsert{e, clash}})
		require.Error(t, err, "inserting two jobs with the same ID in a transaction")
	})
	h.requireNotFound(e.ID)
}

func testInsertRollback[TTx any](h *harness[TTx], _ mode) {
	jobs := []*driver.JobInsert{h.newJob(), h.newJob()}
	h.inTx(false, func(ex driver.Executor) {
		res := h.insertVia(ex, jobs...)
		for i, j := range jobs {
			requireRow(h.t, pendingRow(j), res[i].Job)
		}
	})
	for _, j := range jobs {
		h.requireNotFound(j.ID)
	}
	// The IDs are free again.
	h.insert(jobs...)
	for _, j := range jobs {
		h.requireStored(pendingRow(j))
	}
}
