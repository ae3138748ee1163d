package drivertest

import (
	"sort"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func heartbeatCases[TTx any]() []testCase[TTx] {
	return []testCase[TTx]{
		// A heartbeat extends the leases of exactly the client's processing
		// jobs and counts them.
		{name: "Extends", twin: true, fn: testHeartbeatExtends[TTx]},
		// Given IDs, a heartbeat extends only those of the client's
		// processing jobs; an empty list extends nothing.
		{name: "IDs", twin: true, fn: testHeartbeatIDs[TTx]},
		// A heartbeat in a transaction that rolls back extends nothing.
		{name: "Rollback", fn: testHeartbeatRollback[TTx]},
	}
}

func rescueCases[TTx any]() []testCase[TTx] {
	return []testCase[TTx]{
		// Only processing jobs whose lease ended before Now are rescued:
		// back to pending with an error recorded, or failed when no retry
		// is left.
		{name: "Expired", twin: true, fn: testRescueExpired[TTx]},
		// A job rescued on its last attempt fails.
		{name: "LastAttempt", twin: true, fn: testRescueLastAttempt[TTx]},
		// No more than Limit jobs are rescued at once.
		{name: "Limit", twin: true, fn: testRescueLimit[TTx]},
		// A rescued job's old claim is dead; the job can be claimed again.
		{name: "Reclaim", twin: true, fn: testRescueReclaim[TTx]},
		// A rescue in a transaction that rolls back leaves the claim.
		{name: "Rollback", fn: testRescueRollback[TTx]},
	}
}

// heartbeatMode runs a heartbeat through mode m and returns its count.
func heartbeatMode[TTx any](h *harness[TTx], m mode, client string, until time.Time) int {
	h.t.Helper()
	p := &driver.JobHeartbeatParams{ClientID: client, LockedUntil: until}
	before := *p
	var n int
	h.via(m, func(ex driver.Executor) {
		var err error
		n, err = ex.JobHeartbeat(h.ctx, p)
		require.NoError(h.t, err, "JobHeartbeat")
	})
	require.Equal(h.t, before, *p, "JobHeartbeat modified its params")
	return n
}

func testHeartbeatExtends[TTx any](h *harness[TTx], m mode) {
	mine := []*driver.JobRow{h.started(client1, nil), h.started(client1, nil)}
	theirs := h.started(client2, nil)
	completed := h.started(client1, nil)
	h.finalize(ending(completed, driver.StatusCompleted, h.at(time.Second)))
	completed = h.get(completed.ID)
	retried := h.started(client1, nil)
	h.finalize(retrying(retried, h.at(time.Hour), nil))
	retried = h.get(retried.ID)
	waiting := h.insert(h.newJob())[0]

	// The lease of a job is extended even when it has already ended: the
	// job is still processing until a rescue takes it.
	require.Equal(h.t, 2, heartbeatMode(h, m, client1, h.at(-time.Second)), "jobs extended")
	require.Equal(h.t, 2, heartbeatMode(h, m, client1, h.at(10*time.Minute)), "jobs extended")
	for _, row := range mine {
		want := cloneRow(row)
		want.LockedUntil = h.at(10 * time.Minute)
		h.requireStored(want)
	}
	for _, row := range []*driver.JobRow{theirs, completed, retried, waiting} {
		h.requireStored(row)
	}
	require.Equal(h.t, 0, heartbeatMode(h, m, "client-none", h.at(time.Hour)), "jobs of a client without any")
	h.requireStored(theirs)
}

func testHeartbeatIDs[TTx any](h *harness[TTx], m mode) {
	a, b, c := h.started(client1, nil), h.started(client1, nil), h.started(client1, nil)
	theirs := h.started(client2, nil)
	beat := func(ids ...string) int {
		h.t.Helper()
		p := &driver.JobHeartbeatParams{ClientID: client1, IDs: ids, LockedUntil: h.at(time.Hour)}
		if ids == nil {
			p.IDs = []string{}
		}
		var n int
		h.via(m, func(ex driver.Executor) {
			var err error
			n, err = ex.JobHeartbeat(h.ctx, p)
			require.NoError(h.t, err, "JobHeartbeat")
		})
		return n
	}
	require.Equal(h.t, 0, beat(), "jobs extended by an empty list")
	for _, row := range []*driver.JobRow{a, b, c, theirs} {
		h.requireStored(row)
	}
	// Another client's job, an unknown ID and one that is not a UUID are
	// not extended.
	require.Equal(h.t, 2, beat(a.ID, c.ID, theirs.ID, newID(), "not-an-id"), "jobs extended")
	for _, row := range []*driver.JobRow{a, c} {
		want := cloneRow(row)
		want.LockedUntil = h.at(time.Hour)
		h.requireStored(want)
	}
	h.requireStored(b)
	h.requireStored(theirs)
}

func testHeartbeatRollback[TTx any](h *harness[TTx], _ mode) {
	row := h.started(client1, nil)
	h.inTx(false, func(ex driver.Executor) {
		n, err := ex.JobHeartbeat(h.ctx, &driver.JobHeartbeatParams{ClientID: client1, LockedUntil: h.at(time.Hour)})
		require.NoError(h.t, err, "JobHeartbeat")
		require.Equal(h.t, 1, n, "jobs extended")
	})
	h.requireStored(row)
}

// rescueMode rescues through mode m and returns the rows sorted by ID.
func rescueMode[TTx any](h *harness[TTx], m mode, p *driver.JobRescueParams) []*driver.JobRow {
	h.t.Helper()
	var rows []*driver.JobRow
	h.via(m, func(ex driver.Executor) { rows = h.rescueVia(ex, p) })
	sort.Slice(rows, func(i, j int) bool { return rows[i].ID < rows[j].ID })
	return rows
}

// rescueParams rescues up to 100 jobs at now. The error's Attempt,
// StartedAt and ClientID are ones the driver must ignore.
func rescueParams(now time.Time) *driver.JobRescueParams {
	return &driver.JobRescueParams{
		Now: now,
		Error: driver.AttemptError{Attempt: 99, At: now, Error: "lease expired", Trace: "rescued",
			StartedAt: now.Add(-time.Hour), ClientID: "not-the-holder"},
		Limit: 100,
	}
}

// rescuedRow is what a rescue by p must leave of the expired claim row.
func rescuedRow(row *driver.JobRow, p *driver.JobRescueParams) *driver.JobRow {
	e := p.Error
	e.Attempt, e.StartedAt, e.ClientID = row.Attempt, row.AttemptedAt, row.LockedBy
	if row.Attempt <= row.MaxRetries {
		w := unlocked(row, driver.StatusPending)
		w.RunAt = p.Now
		w.Errors = append(w.Errors, e)
		return w
	}
	w := unlocked(row, driver.StatusFailed)
	w.FinalizedAt = p.Now
	w.Errors = append(w.Errors, e)
	return w
}

// requireRescued requires rows (sorted by ID) to be exactly the rescued
// forms of want, and stored so. The RunAt of a job that failed is not
// specified.
func requireRescued[TTx any](h *harness[TTx], p *driver.JobRescueParams, rows []*driver.JobRow, want ...*driver.JobRow) {
	h.t.Helper()
	sort.Slice(want, func(i, j int) bool { return want[i].ID < want[j].ID })
	require.Equal(h.t, ids(want), ids(rows), "rescued jobs")
	for i, w := range want {
		r := rescuedRow(w, p)
		if r.Status == driver.StatusFailed {
			r.RunAt = rows[i].RunAt
		}
		requireRow(h.t, r, rows[i])
		h.requireStored(r)
	}
}

func testRescueExpired[TTx any](h *harness[TTx], m mode) {
	claim := func(maxRetries int, lease time.Duration) *driver.JobRow {
		j := h.newJob()
		j.MaxRetries = maxRetries
		row := h.insert(j)[0]
		return h.claimJob(row, client1, h.base, h.at(lease))
	}
	retry := claim(3, time.Minute)     // retries left: back to pending
	lastRetry := claim(1, time.Second) // Attempt == MaxRetries: still a retry left
	noRetry := claim(0, time.Minute)   // no retry left: failed
	live := claim(3, 3*time.Minute)    // lease not ended
	edge := claim(3, 2*time.Minute)    // lease ends exactly at Now: not before it
	completed := h.started(client1, nil)
	h.finalize(ending(completed, driver.StatusCompleted, h.at(time.Second)))
	completed = h.get(completed.ID)
	waiting := h.newJob()
	waiting.RunAt = h.at(-time.Hour)
	waitingRow := h.insert(waiting)[0]

	p := rescueParams(h.at(2 * time.Minute))
	p.Error.At = p.Error.At.In(time.FixedZone("UTC+02:00", 2*3600)) // returned in UTC
	before := *p
	rows := rescueMode(h, m, p)
	require.Equal(h.t, before, *p, "JobRescue modified its params")
	requireRescued(h, p, rows, retry, lastRetry, noRetry)
	for _, row := range []*driver.JobRow{live, edge, completed, waitingRow} {
		h.requireStored(row)
	}
}

func testRescueLastAttempt[TTx any](h *harness[TTx], m mode) {
	j := h.newJob()
	j.MaxRetries = 1
	row := h.started(client1, j)
	p := rescueParams(h.at(2 * time.Minute))
	requireRescued(h, p, rescueMode(h, m, p), row)

	row = h.claimJob(h.get(row.ID), client2, h.at(3*time.Minute), h.at(4*time.Minute))
	require.Equal(h.t, 2, row.Attempt, "Attempt of the second claim")
	p = rescueParams(h.at(5 * time.Minute))
	p.Error.Error = "lease expired again"
	rows := rescueMode(h, m, p)
	requireRescued(h, p, rows, row)
	require.Equal(h.t, driver.StatusFailed, rows[0].Status, "a job rescued on its last attempt")
	require.Len(h.t, rows[0].Errors, 2, "errors of both attempts")
}

func testRescueLimit[TTx any](h *harness[TTx], m mode) {
	all := map[string]bool{}
	for range 5 {
		all[h.started(client1, nil).ID] = true
	}
	p := rescueParams(h.at(2 * time.Minute))
	p.Limit = 2
	got := map[string]bool{}
	for _, want := range []int{2, 2, 1, 0} {
		rows := rescueMode(h, m, p)
		require.Len(h.t, rows, want, "jobs rescued with Limit %d", p.Limit)
		for _, r := range rows {
			require.False(h.t, got[r.ID], "job %s rescued twice", r.ID)
			got[r.ID] = true
			require.Equal(h.t, driver.StatusPending, h.get(r.ID).Status, "rescued job %s", r.ID)
		}
	}
	require.Equal(h.t, all, got, "rescued jobs")
}

func testRescueReclaim[TTx any](h *harness[TTx], m mode) {
	row := h.started(client1, nil)
	p := rescueParams(h.at(2 * time.Minute))
	requireRescued(h, p, rescueMode(h, m, p), row)
	rescued := rescuedRow(row, p)

	// The old claim is dead: it can be neither finalized nor extended.
	require.Equal(h.t, []bool{false}, h.finalizeVia(h.exec(), ending(row, driver.StatusCompleted, h.at(3*time.Minute))))
	require.Equal(h.t, 0, heartbeatMode(h, direct, client1, h.at(time.Hour)), "heartbeat of a rescued claim")
	h.requireStored(rescued)

	again := h.claimJob(rescued, client2, h.at(3*time.Minute), h.at(4*time.Minute))
	requireRow(h.t, claimedRow(rescued, client2, h.at(3*time.Minute), h.at(4*time.Minute)), again)
	require.Equal(h.t, 2, again.Attempt, "Attempt of the new claim")
}

func testRescueRollback[TTx any](h *harness[TTx], _ mode) {
	row := h.started(client1, nil)
	p := rescueParams(h.at(2 * time.Minute))
	h.inTx(false, func(ex driver.Executor) {
		require.Equal(h.t, []string{row.ID}, ids(h.rescueVia(ex, p)), "rescued in the transaction")
	})
	h.requireStored(row)
	requireRescued(h, p, rescueMode(h, direct, p), row)
}
