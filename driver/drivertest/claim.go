package drivertest

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func claimCases[TTx any]() []testCase[TTx] {
	return []testCase[TTx]{
		// A claim sets status, LockedBy, AttemptedBy, LockedUntil,
		// AttemptedAt and Attempt, changes nothing else, and returns the
		// job as stored.
		{name: "Fields", twin: true, fn: testClaimFields[TTx]},
		// Only jobs whose RunAt is at or before Now are claimed, to the
		// microsecond; a delayed job is claimed once Now reaches its RunAt.
		{name: "Due", twin: true, fn: testClaimDue[TTx]},
		// Only jobs of the given queue are claimed.
		{name: "Queue", twin: true, fn: testClaimQueue[TTx]},
		// Only jobs of the given topics are claimed.
		{name: "Topics", twin: true, fn: testClaimTopics[TTx]},
		// No more than Limit jobs are claimed at once.
		{name: "Limit", twin: true, fn: testClaimLimit[TTx]},
		// Jobs are claimed and returned by Priority, then RunAt, then ID.
		{name: "Order", twin: true, fn: testClaimOrder[TTx]},
		// Times compare as instants, whatever their location.
		{name: "TimeZones", twin: true, fn: testClaimTimeZones[TTx]},
		// Processing jobs (even with an expired lease) and finished jobs are
		// never claimed.
		{name: "NotReclaimed", twin: true, fn: testClaimNotReclaimed[TTx]},
		// Claimers running at once claim every job exactly once.
		{name: "Concurrent", fn: testClaimConcurrent[TTx]},
		// A claim in a transaction that rolls back leaves the job pending.
		{name: "Rollback", fn: testClaimRollback[TTx]},
	}
}

// claimMode claims through mode m.
func claimMode[TTx any](h *harness[TTx], m mode, p *driver.JobClaimParams) []*driver.JobRow {
	h.t.Helper()
	var rows []*driver.JobRow
	h.via(m, func(ex driver.Executor) { rows = h.claimVia(ex, p) })
	return rows
}

// requireClaimed requires rows to be exactly the pending rows want, in
// order, as claimed by p, and stored so.
func requireClaimed[TTx any](h *harness[TTx], p *driver.JobClaimParams, rows []*driver.JobRow, want ...*driver.JobRow) {
	h.t.Helper()
	require.Equal(h.t, ids(want), ids(rows), "claimed jobs, in order")
	for i, w := range want {
		c := claimedRow(w, p.ClientID, p.Now, p.LockedUntil)
		requireRow(h.t, c, rows[i])
		h.requireStored(c)
	}
}

func testClaimFields[TTx any](h *harness[TTx], m mode) {
	t := h.t
	j := h.newJob()
	j.UniqueKey = "key-" + newID()
	j.Priority = 3
	row := h.insert(j)[0]
	p := claimParams(h.at(time.Second), j.Topic)
	p.ClientID = "client-fields"
	p.LockedUntil = h.at(10 * time.Minute)
	before := *p
	before.Topics = slices.Clone(p.Topics)
	rows := claimMode(h, m, p)
	require.Equal(t, before, *p, "JobClaim modified its params")
	requireClaimed(h, p, rows, row)

	// A second attempt, after a retry, counts up and keeps the errors.
	e := &driver.AttemptError{Attempt: 1, At: h.at(2 * time.Second), Error: "boom"}
	h.finalize(retrying(rows[0], h.at(time.Minute), e))
	retried := unlocked(rows[0], driver.StatusPending)
	retried.RunAt = h.at(time.Minute)
	retried.Errors = []driver.AttemptError{*e}
	p = claimParams(h.at(2*time.Minute), j.Topic)
	rows = claimMode(h, m, p)
	requireClaimed(h, p, rows, retried)
	require.Equal(t, 2, rows[0].Attempt, "Attempt of the second claim")
}

func testClaimDue[TTx any](h *harness[TTx], m mode) {
	jobs := h.jobs(5, "due")
	offsets := []time.Duration{-time.Minute, 0, time.Microsecond, 2 * time.Microsecond, time.Hour}
	for i, j := range jobs {
		j.RunAt = h.at(offsets[i])
	}
	rows := h.insert(jobs...)

	p := claimParams(h.base, "due")
	requireClaimed(h, p, claimMode(h, m, p), rows[0], rows[1])
	p = claimParams(h.at(time.Microsecond), "due")
	requireClaimed(h, p, claimMode(h, m, p), rows[2])
	p = claimParams(h.at(time.Hour-time.Microsecond), "due")
	requireClaimed(h, p, claimMode(h, m, p), rows[3])
	h.requireStored(rows[4])
	p = claimParams(h.at(time.Hour), "due")
	requireClaimed(h, p, claimMode(h, m, p), rows[4])
}

func testClaimQueue[TTx any](h *harness[TTx], m mode) {
	jobs := h.jobs(3, "queued")
	jobs[0].Queue = "q1"
	jobs[1].Queue = "q2"
	jobs[2].Queue = "q1"
	for i, j := range jobs {
		j.RunAt = h.at(time.Duration(i-10) * time.Second)
	}
	rows := h.insert(jobs...)

	p := claimParams(h.base, "queued")
	p.Queue = "q1"
	requireClaimed(h, p, claimMode(h, m, p), rows[0], rows[2])
	requireClaimed(h, p, claimMode(h, m, p))
	h.requireStored(rows[1])
	p.Queue = "q2"
	requireClaimed(h, p, claimMode(h, m, p), rows[1])
}

func testClaimTopics[TTx any](h *harness[TTx], m mode) {
	jobs := h.jobs(4, "")
	for i, topic := range []string{"alpha", "beta", "gamma", "alpha"} {
		jobs[i].Topic = topic
		jobs[i].RunAt = h.at(time.Duration(i) * time.Microsecond)
	}
	rows := h.insert(jobs...)

	p := claimParams(h.at(time.Second), "alpha", "gamma", "delta")
	requireClaimed(h, p, claimMode(h, m, p), rows[0], rows[2], rows[3])
	h.requireStored(rows[1])
	p = claimParams(h.at(time.Second), "beta")
	requireClaimed(h, p, claimMode(h, m, p), rows[1])
}

func testClaimLimit[TTx any](h *harness[TTx], m mode) {
	jobs := h.jobs(5, "limited")
	for i, j := range jobs {
		j.RunAt = h.at(time.Duration(i-10) * time.Second)
	}
	rows := h.insert(jobs...)

	p := claimParams(h.base, "limited")
	p.Limit = 2
	requireClaimed(h, p, claimMode(h, m, p), rows[0], rows[1])
	requireClaimed(h, p, claimMode(h, m, p), rows[2], rows[3])
	requireClaimed(h, p, claimMode(h, m, p), rows[4])
	requireClaimed(h, p, claimMode(h, m, p))
	p.Limit = 1
	requireClaimed(h, p, claimMode(h, m, p))
}

func testClaimOrder[TTx any](h *harness[TTx], m mode) {
	id := sortedIDs(6)
	spec := []struct {
		priority int
		runAt    time.Duration
		id       string
	}{
		{1, -3 * time.Minute, id[4]},  // 0: fourth
		{2, -10 * time.Minute, id[0]}, // 1: fifth
		{2, -10 * time.Minute, id[2]}, // 2: sixth
		{1, -3 * time.Minute, id[1]},  // 3: third
		{0, -time.Minute, id[3]},      // 4: first
		{1, -5 * time.Minute, id[5]},  // 5: second
	}
	jobs := h.jobs(len(spec), "ordered")
	for i, s := range spec {
		jobs[i].ID, jobs[i].Priority, jobs[i].RunAt = s.id, s.priority, h.at(s.runAt)
	}
	rows := h.insert(jobs...)

	p := claimParams(h.base, "ordered")
	p.Limit = 2
	requireClaimed(h, p, claimMode(h, m, p), rows[4], rows[5])
	p.Limit = 10
	requireClaimed(h, p, claimMode(h, m, p), rows[3], rows[0], rows[1], rows[2])
}

func testClaimTimeZones[TTx any](h *harness[TTx], m mode) {
	east := time.FixedZone("UTC+05:30", 5*3600+1800)
	west := time.FixedZone("UTC-07:00", -7*3600)
	j := h.newJob()
	j.RunAt = h.at(time.Minute).In(west)
	row := h.insert(j)[0]

	// Compared as local wall-clock text, the job would look due at base
	// and due a microsecond early written in another zone.
	p := claimParams(h.base, j.Topic)
	requireClaimed(h, p, claimMode(h, m, p))
	p = claimParams(h.at(time.Minute-time.Microsecond).In(east), j.Topic)
	requireClaimed(h, p, claimMode(h, m, p))

	p = claimParams(h.at(time.Minute).In(east), j.Topic)
	p.LockedUntil = h.at(2 * time.Minute).In(west)
	requireClaimed(h, p, claimMode(h, m, p), row)
}

func testClaimNotReclaimed[TTx any](h *harness[TTx], m mode) {
	processing := h.started(client1, nil)
	topics := []string{processing.Topic}
	var finished []*driver.JobRow
	for _, status := range []driver.JobStatus{driver.StatusCompleted, driver.StatusFailed, driver.StatusCancelled} {
		row := h.started(client1, nil)
		h.finalize(ending(row, status, h.at(time.Second)))
		final := unlocked(row, status)
		final.FinalizedAt = h.at(time.Second)
		finished = append(finished, final)
		topics = append(topics, row.Topic)
	}

	// Long after every lease ended, a claim still takes nothing.
	p := claimParams(h.at(time.Hour), topics...)
	p.ClientID = client2
	requireClaimed(h, p, claimMode(h, m, p))
	h.requireStored(processing)
	for _, f := range finished {
		h.requireStored(f)
	}
}

func testClaimConcurrent[TTx any](h *harness[TTx], _ mode) {
	const jobCount, claimers = 120, 8
	h.insert(h.jobs(jobCount, "busy")...)

	var (
		mu      sync.Mutex
		claimer = map[string][]string{} // job ID -> clients that claimed it
		errs    []error
		wg      sync.WaitGroup
	)
	for c := range claimers {
		client := fmt.Sprintf("claimer-%d", c)
		wg.Go(func() {
			for {
				p := claimParams(h.base, "busy")
				p.ClientID, p.Limit = client, 3
				rows, err := h.exec().JobClaim(h.ctx, p)
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", client, err))
				}
				for _, r := range rows {
					claimer[r.ID] = append(claimer[r.ID], client)
				}
				mu.Unlock()
				if err != nil || len(rows) == 0 {
					return
				}
			}
		})
	}
	wg.Wait()

	require.Empty(h.t, errs, "errors of concurrent claims")
	require.Len(h.t, claimer, jobCount, "jobs claimed")
	for id, clients := range claimer {
		require.Len(h.t, clients, 1, "job %s was claimed by %v", id, clients)
		row := h.get(id)
		require.Equal(h.t, driver.StatusProcessing, row.Status, "job %s", id)
		require.Equal(h.t, clients[0], row.LockedBy, "job %s", id)
		require.Equal(h.t, 1, row.Attempt, "job %s", id)
	}
}

func testClaimRollback[TTx any](h *harness[TTx], _ mode) {
	row := h.insert(h.newJob())[0]
	p := claimParams(h.base, row.Topic)
	h.inTx(false, func(ex driver.Executor) {
		rows := h.claimVia(ex, p)
		require.Equal(h.t, []string{row.ID}, ids(rows), "claimed in the transaction")
		requireRow(h.t, claimedRow(row, p.ClientID, p.Now, p.LockedUntil), h.getVia(ex, row.ID))
	})
	h.requireStored(row)
	requireClaimed(h, p, h.claimVia(h.exec(), p), row)
}
