package drivertest

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func flowCases[TTx any]() []testCase[TTx] {
	return []testCase[TTx]{
		// A queue state reads back as set; fields left nil keep their
		// value; 0 removes a limit; the list is sorted by queue.
		{name: "QueueState", twin: true, fn: testQueueState[TTx]},
		// A paused queue yields no job to any claim; other queues do; a
		// resumed one yields its jobs again.
		{name: "Paused", twin: true, fn: testClaimPaused[TTx]},
		// A claim without Flow ignores the queue's state.
		{name: "WithoutFlow", twin: true, fn: testClaimWithoutFlow[TTx]},
		// With MaxRunning, claims leave at most that many of the queue's
		// jobs processing, and claim again as they end.
		{name: "MaxRunning", twin: true, fn: testClaimMaxRunning[TTx]},
		// Claimers running at once never exceed MaxRunning together.
		{name: "MaxRunningConcurrent", fn: testClaimMaxRunningConcurrent[TTx]},
		// With a rate limit, claims take at most RateLimit jobs per
		// window of RatePeriod.
		{name: "Rate", twin: true, fn: testClaimRate[TTx]},
		// A job with dependencies is stored waiting with the RunAt it was
		// given, is claimed by no one, and is released once they complete.
		{name: "Waiting", twin: true, fn: testWaiting[TTx]},
		// A release looks past any number of older jobs still blocked:
		// a job whose dependency completed is released, whatever the
		// Limit.
		{name: "WaitingBehindBlocked", twin: true, fn: testWaitingBehindBlocked[TTx]},
		// Many waiting jobs inserted at once (the drivers' bulk paths)
		// are all stored waiting.
		{name: "WaitingMany", fn: testWaitingMany[TTx]},
		// A dependency that fails, is cancelled or is gone cancels a job
		// of policy cancel, with an error naming it; a job of policy run
		// is released once every dependency is final.
		{name: "DependencyFailure", twin: true, fn: testDependencyFailure[TTx]},
		// RetryNow does not release a waiting job; a cancelled one
		// keeps its RunAt and waits no more.
		{name: "WaitingActs", fn: testWaitingActs[TTx]},
		// An insert of a waiting job in a transaction that rolls back
		// leaves nothing.
		{name: "Rollback", fn: testFlowRollback[TTx]},
	}
}

func (h *harness[TTx]) setQueue(ex driver.Executor, p *driver.QueueStateSetParams) *driver.QueueState {
	h.t.Helper()
	if p.Now.IsZero() {
		p.Now = h.base
	}
	s, err := ex.QueueStateSet(h.ctx, p)
	require.NoError(h.t, err, "QueueStateSet")
	return s
}

func (h *harness[TTx]) release(ex driver.Executor, now time.Time) []*driver.JobRow {
	h.t.Helper()
	rows, err := ex.JobRelease(h.ctx, &driver.JobReleaseParams{Now: now, Limit: 100})
	require.NoError(h.t, err, "JobRelease")
	return rows
}

func ptr[T any](v T) *T { return &v }

// flowClaim returns claimParams with Flow set, as a client claims from a
// queue it has seen a state for.
func flowClaim(now time.Time, topics ...string) *driver.JobClaimParams {
	p := claimParams(now, topics...)
	p.Flow = true
	return p
}

func testQueueState[TTx any](h *harness[TTx], m mode) {
	t := h.t
	h.via(m, func(ex driver.Executor) {
		s := h.setQueue(ex, &driver.QueueStateSetParams{Queue: "b", Paused: ptr(true)})
		require.Equal(t, &driver.QueueState{Queue: "b", Paused: true, UpdatedAt: h.base}, s)
		s = h.setQueue(ex, &driver.QueueStateSetParams{Queue: "b", MaxRunning: ptr(4),
			Rate: &driver.QueueRate{Limit: 10, Period: time.Minute}, Now: h.at(time.Second)})
		require.Equal(t, &driver.QueueState{Queue: "b", Paused: true, MaxRunning: 4, RateLimit: 10,
			RatePeriod: time.Minute, UpdatedAt: h.at(time.Second)}, s)
		s = h.setQueue(ex, &driver.QueueStateSetParams{Queue: "b", Paused: ptr(false), MaxRunning: ptr(0),
			Now: h.at(2 * time.Second)})
		require.Equal(t, &driver.QueueState{Queue: "b", RateLimit: 10, RatePeriod: time.Minute,
			UpdatedAt: h.at(2 * time.Second)}, s)
		h.setQueue(ex, &driver.QueueStateSetParams{Queue: "a", Rate: &driver.QueueRate{}})
	})
	list, err := h.exec().QueueStateList(h.ctx, &driver.QueueStateListParams{})
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, &driver.QueueState{Queue: "a", UpdatedAt: h.base}, list[0])
	require.Equal(t, "b", list[1].Queue)
	require.Equal(t, 10, list[1].RateLimit)
}

func testClaimPaused[TTx any](h *harness[TTx], m mode) {
	t := h.t
	j, other := h.newJob(), h.newJob()
	other.Queue, other.Topic = "other", j.Topic
	h.insert(j, other)
	h.setQueue(h.exec(), &driver.QueueStateSetParams{Queue: "default", Paused: ptr(true)})
	require.Empty(t, claimMode(h, m, flowClaim(h.at(time.Second), j.Topic)), "claim of a paused queue")
	p := flowClaim(h.at(time.Second), j.Topic)
	p.Queue = "other"
	require.Len(t, claimMode(h, m, p), 1, "claim of another queue")
	h.setQueue(h.exec(), &driver.QueueStateSetParams{Queue: "default", Paused: ptr(false)})
	require.Len(t, claimMode(h, m, flowClaim(h.at(time.Second), j.Topic)), 1, "claim of a resumed queue")
}

func testClaimWithoutFlow[TTx any](h *harness[TTx], m mode) {
	j := h.newJob()
	h.insert(j)
	h.setQueue(h.exec(), &driver.QueueStateSetParams{Queue: "default", Paused: ptr(true), MaxRunning: ptr(1)})
	require.Len(h.t, claimMode(h, m, claimParams(h.at(time.Second), j.Topic)), 1, "claim without Flow of a paused queue")
}

func testClaimMaxRunning[TTx any](h *harness[TTx], m mode) {
	t := h.t
	h.insert(h.jobs(5, "limited")...)
	h.setQueue(h.exec(), &driver.QueueStateSetParams{Queue: "default", MaxRunning: ptr(2)})
	now := h.at(time.Second)
	rows := claimMode(h, m, flowClaim(now, "limited"))
	require.Len(t, rows, 2, "first claim")
	require.Empty(t, claimMode(h, m, flowClaim(now, "limited")), "claim at the limit")
	h.finalize(ending(rows[0], driver.StatusCompleted, now))
	require.Len(t, claimMode(h, m, flowClaim(now, "limited")), 1, "claim after one ended")
	h.setQueue(h.exec(), &driver.QueueStateSetParams{Queue: "default", MaxRunning: ptr(0)})
	require.Len(t, claimMode(h, m, flowClaim(now, "limited")), 2, "claim without a limit")
}

func testClaimMaxRunningConcurrent[TTx any](h *harness[TTx], _ mode) {
	t := h.t
	h.insert(h.jobs(40, "limited")...)
	h.setQueue(h.exec(), &driver.QueueStateSetParams{Queue: "default", MaxRunning: ptr(3)})
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		total int
	)
	for range 8 {
		wg.Go(func() {
			p := flowClaim(h.at(time.Second), "limited")
			p.Limit = 2
			rows, err := h.exec().JobClaim(h.ctx, p)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			total += len(rows)
			mu.Unlock()
		})
	}
	wg.Wait()
	require.Equal(t, 3, total, "jobs claimed by claimers at once")
}

func testClaimRate[TTx any](h *harness[TTx], m mode) {
	t := h.t
	h.insert(h.jobs(10, "rated")...)
	h.setQueue(h.exec(), &driver.QueueStateSetParams{Queue: "default", Rate: &driver.QueueRate{Limit: 3, Period: time.Minute}})
	p := flowClaim(h.at(time.Second), "rated")
	p.Limit = 2
	require.Len(t, claimMode(h, m, p), 2, "first claim")
	require.Len(t, claimMode(h, m, flowClaim(h.at(2*time.Second), "rated")), 1, "rest of the window")
	require.Empty(t, claimMode(h, m, flowClaim(h.at(60*time.Second), "rated")), "window used up")
	require.Len(t, claimMode(h, m, flowClaim(h.at(61*time.Second), "rated")), 3, "next window")
	require.Empty(t, claimMode(h, m, flowClaim(h.at(62*time.Second), "rated")), "next window used up")
}

// waiter returns a job that waits for deps with policy.
func (h *harness[TTx]) waiter(policy driver.DependencyPolicy, deps ...string) *driver.JobInsert {
	j := h.newJob()
	j.DependsOn, j.OnDependencyFailure = deps, policy
	return j
}

func testWaiting[TTx any](h *harness[TTx], m mode) {
	t := h.t
	a, b := h.newJob(), h.newJob()
	w := h.waiter(driver.DependencyCancel, a.ID, b.ID)
	w.RunAt = h.at(-time.Minute)
	var res []driver.JobInsertResult
	h.via(m, func(ex driver.Executor) { res = h.insertVia(ex, a, b, w) })
	want := pendingRow(w)
	requireRow(t, want, res[2].Job)
	h.requireStored(want)
	require.Empty(t, h.claimVia(h.exec(), claimParams(h.at(time.Hour), w.Topic)), "claim of a waiting job")

	ra := h.claimJob(pendingRow(a), client1, h.base, h.at(time.Minute))
	h.finalize(ending(ra, driver.StatusCompleted, h.at(time.Second)))
	h.via(m, func(ex driver.Executor) {
		require.Empty(t, h.release(ex, h.at(time.Second)), "release with one dependency left")
	})
	rb := h.claimJob(pendingRow(b), client1, h.base, h.at(time.Minute))
	h.finalize(ending(rb, driver.StatusCompleted, h.at(time.Second)))
	var released []*driver.JobRow
	h.via(m, func(ex driver.Executor) { released = h.release(ex, h.at(2*time.Second)) })
	want.Waiting = false
	require.Len(t, released, 1)
	requireRow(t, want, released[0])
	h.requireStored(want)
	h.claimJob(want, client1, h.base, h.at(time.Minute))
	require.Empty(t, h.release(h.exec(), h.at(3*time.Second)), "a second release")
}

func testWaitingBehindBlocked[TTx any](h *harness[TTx], m mode) {
	t := h.t
	blocker := h.newJob()
	jobs := []*driver.JobInsert{blocker}
	for range 7 {
		jobs = append(jobs, h.waiter(driver.DependencyCancel, blocker.ID))
	}
	dep := h.newJob()
	w := h.waiter(driver.DependencyCancel, dep.ID)
	h.insert(append(jobs, dep, w)...)
	rd := h.claimJob(pendingRow(dep), client1, h.base, h.at(time.Minute))
	h.finalize(ending(rd, driver.StatusCompleted, h.at(time.Second)))
	var released []*driver.JobRow
	h.via(m, func(ex driver.Executor) {
		var err error
		released, err = ex.JobRelease(h.ctx, &driver.JobReleaseParams{Now: h.at(2 * time.Second), Limit: 3})
		require.NoError(t, err, "JobRelease")
	})
	require.Equal(t, []string{w.ID}, ids(released), "released behind seven blocked jobs, three a page")
}

func testWaitingMany[TTx any](h *harness[TTx], m mode) {
	t := h.t
	blocker := h.newJob()
	jobs := []*driver.JobInsert{blocker}
	for i := range 150 {
		w := h.waiter(driver.DependencyCancel, blocker.ID)
		w.Topic, w.RunAt = "waiters", h.at(time.Duration(i%3)*time.Second)
		if i%10 == 0 { // some with tags and metadata, one with a unique key
			w.Tags, w.Metadata = []string{"t"}, json.RawMessage(`{"k":"v"}`)
		}
		if i == 20 {
			w.UniqueKey, w.OnDependencyFailure = "waiting-unique", driver.DependencyRun
		}
		jobs = append(jobs, w)
	}
	free := h.newJob() // in the same batch, waiting for nothing
	free.Topic = "waiters"
	jobs = append(jobs, free)
	rows := h.insert(jobs...)
	for i, j := range jobs[1:] {
		requireRow(t, pendingRow(j), rows[i+1])
		h.requireStored(pendingRow(j))
	}
	// A duplicate of the waiting unique job, waiting for another, leaves it
	// as it is.
	dup := h.waiter(driver.DependencyCancel, free.ID)
	dup.UniqueKey = jobs[21].UniqueKey
	require.True(t, h.insertVia(h.exec(), dup)[0].Duplicate)
	h.requireStored(pendingRow(jobs[21]))
	claimed := h.claimVia(h.exec(), claimParams(h.at(time.Hour), blocker.Topic, "waiters"))
	require.ElementsMatch(t, []string{blocker.ID, free.ID}, ids(claimed), "only the blocker and the free job are claimed")
	for _, r := range claimed {
		h.finalize(ending(r, driver.StatusCompleted, h.at(time.Second)))
	}
	released := h.release(h.exec(), h.at(2*time.Second))
	require.Len(t, released, 150)
	for _, j := range jobs[1:151] {
		want := pendingRow(j)
		want.Waiting = false
		h.requireStored(want)
	}
}

func testDependencyFailure[TTx any](h *harness[TTx], m mode) {
	t := h.t
	failed, done := h.newJob(), h.newJob()
	gone := newID()
	byFail := h.waiter(driver.DependencyCancel, done.ID, failed.ID)
	byGone := h.waiter(driver.DependencyCancel, gone)
	runs := h.waiter(driver.DependencyRun, failed.ID, done.ID)
	h.insert(failed, done, byFail, byGone, runs)
	rf := h.claimJob(pendingRow(failed), client1, h.base, h.at(time.Minute))
	h.finalize(ending(rf, driver.StatusFailed, h.at(time.Second)))

	now := h.at(2 * time.Second)
	var rows []*driver.JobRow
	h.via(m, func(ex driver.Executor) { rows = h.release(ex, now) })
	require.ElementsMatch(t, []string{byFail.ID, byGone.ID}, ids(rows), "settled while a dependency is pending")
	for _, c := range []struct {
		j   *driver.JobInsert
		msg string
	}{{byFail, driver.DependencyError(failed.ID, driver.StatusFailed)}, {byGone, driver.DependencyError(gone, "")}} {
		want := pendingRow(c.j)
		want.Status, want.Waiting, want.FinalizedAt = driver.StatusCancelled, false, now
		want.Errors = []driver.AttemptError{{At: now, Error: c.msg}}
		h.requireStored(want)
	}

	rd := h.claimJob(pendingRow(done), client1, h.base, h.at(time.Minute))
	h.finalize(ending(rd, driver.StatusCompleted, now))
	h.via(m, func(ex driver.Executor) { rows = h.release(ex, now) })
	require.Equal(t, []string{runs.ID}, ids(rows), "policy run, every dependency final")
	want := pendingRow(runs)
	want.Waiting = false
	h.requireStored(want)

	// A job cancelled for its dependency, requeued, runs without waiting.
	requeued, err := h.exec().JobRequeue(h.ctx, &driver.JobActParams{IDs: []string{byFail.ID}, Now: now, Retries: 1})
	require.NoError(t, err)
	require.Len(t, requeued, 1)
	require.False(t, requeued[0].Waiting, "a requeued job waits no more")
	h.claimJob(requeued[0], client1, now, h.at(time.Minute))
	require.Empty(t, h.release(h.exec(), now), "nothing left to settle")
}

func testWaitingActs[TTx any](h *harness[TTx], _ mode) {
	t := h.t
	dep := h.newJob()
	w := h.waiter(driver.DependencyCancel, dep.ID)
	h.insert(dep, w)
	rows, err := h.exec().JobRetryNow(h.ctx, &driver.JobActParams{IDs: []string{w.ID}, Now: h.at(time.Second)})
	require.NoError(t, err)
	require.Empty(t, rows, "retry now of a waiting job")
	h.requireStored(pendingRow(w))

	rows, err = h.exec().JobCancel(h.ctx, &driver.JobActParams{IDs: []string{w.ID}, Now: h.at(time.Second)})
	require.NoError(t, err)
	want := pendingRow(w)
	want.Status, want.Waiting, want.FinalizedAt = driver.StatusCancelled, false, h.at(time.Second)
	require.Len(t, rows, 1)
	requireRow(t, want, rows[0])
	require.Empty(t, h.release(h.exec(), h.at(2*time.Second)), "release of a cancelled job")
}

func testFlowRollback[TTx any](h *harness[TTx], _ mode) {
	dep := h.newJob()
	w := h.waiter(driver.DependencyRun, dep.ID)
	h.inTx(false, func(ex driver.Executor) { h.insertVia(ex, dep, w) })
	h.requireNotFound(w.ID)
	h.inTx(false, func(ex driver.Executor) {
		h.setQueue(ex, &driver.QueueStateSetParams{Queue: "default", Paused: ptr(true)})
	})
	list, err := h.exec().QueueStateList(h.ctx, &driver.QueueStateListParams{})
	require.NoError(h.t, err)
	require.Empty(h.t, list)
}
