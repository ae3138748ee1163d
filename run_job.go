package sluice

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// jobRun is one claim of a job by a run, shared by the run and the Job
// handed to the worker.
type jobRun struct {
	row  *JobRow
	unit *workUnit
	// run is the run that claimed the job; release frees the job's slot in
	// its queue's claim loop.
	run     *run
	release func()
	// job is the job with its decoded arguments, as unit.work takes it,
	// and timeout the worker's timeout for it; prepErr is why the job
	// could not be prepared (no worker, arguments that do not decode), in
	// which case job is nil.
	job     any
	timeout time.Duration
	prepErr error
	// settled is set when the worker acked or nacked in its own
	// transaction.
	settled atomic.Bool
	// revoked is set when the job was cancelled, deleted or taken back
	// while running, so that its outcome cannot be recorded.
	revoked atomic.Bool
	// result is what the worker passed to SetResult, as JSON.
	result atomic.Pointer[[]byte]
	// progress is what the worker last passed to ReportProgress, and
	// progressWritten the report last written to the database; only the
	// run's progress writer touches progressWritten.
	progress        atomic.Pointer[JobProgress]
	progressWritten *JobProgress
	// finished is set by whichever ends the run first: the worker
	// returning, or the client abandoning a worker that ignores its
	// context.
	finished atomic.Bool
	// cancel ends the worker's context (a timeout's, or a plain one);
	// revoke ends it with a cause first. Both are set before the run is
	// tracked as running.
	cancel context.CancelFunc
	revoke context.CancelCauseFunc
	// fin is the outcome the client writes when the run ends (by whichever
	// ends it: see finished).
	fin driver.JobFinalize
	// log is what the job's Logger keeps, once the worker asked for it.
	log atomic.Pointer[jobLog]
	// row is the worker's own copy of the job's row, set by prepare: what
	// middleware, hooks and handlers are shown (nil if prepare failed).
	workerRow *JobRow
	// retryIn is an ErrorHandler's delay before the retry, if it chose
	// one.
	retryIn time.Duration
	// deps are the jobs the job depends on, read once by the first
	// DependencyResult or Dependencies call (see dependencies).
	depsOnce sync.Once
	deps     []*JobRow
	depsErr  error
	// mw is the work middleware of the job's worker, the Config's first.
	mw []WorkMiddleware
}

// view returns the job's row as middleware, hooks and handlers see it:
// the worker's copy, or, for a job that never reached its worker, a copy
// of the claimed row.
func (jr *jobRun) view() *JobRow {
	if jr.workerRow != nil {
		return jr.workerRow
	}
	row := *jr.row
	return &row
}

// end ends the worker's context with cause, which starts the grace period
// the worker has to return.
func (jr *jobRun) end(cause error) {
	jr.revoke(cause)
	jr.cancel()
}

// runningJobs are the jobs a run is working.
type runningJobs struct {
	mu   sync.Mutex
	jobs map[string]*jobRun
	// cancelled is the cause the run's jobs were cancelled with, once
	// cancelAll was called: a job tracked later is cancelled at once.
	cancelled error
}

// track records jr as running until untrack.
func (rj *runningJobs) track(jr *jobRun) {
	rj.mu.Lock()
	if rj.jobs == nil {
		rj.jobs = make(map[string]*jobRun)
	}
	rj.jobs[jr.row.ID] = jr
	cause := rj.cancelled
	rj.mu.Unlock()
	if cause != nil {
		jr.end(cause)
	}
}

// cancelAll ends the contexts of the running jobs, and of every job tracked
// from now on, with cause. It is idempotent; the first cause stays.
func (rj *runningJobs) cancelAll(cause error) {
	rj.mu.Lock()
	if rj.cancelled == nil {
		rj.cancelled = cause
	}
	cause = rj.cancelled
	jobs := make([]*jobRun, 0, len(rj.jobs))
	for _, jr := range rj.jobs {
		jobs = append(jobs, jr)
	}
	rj.mu.Unlock()
	for _, jr := range jobs {
		jr.end(cause)
	}
}

// untrack records that jr no longer runs. It does nothing if jr was
// untracked already, or if a later run of the same job took its place.
func (rj *runningJobs) untrack(jr *jobRun) {
	rj.mu.Lock()
	defer rj.mu.Unlock()
	if rj.jobs[jr.row.ID] == jr {
		delete(rj.jobs, jr.row.ID)
	}
}

// heldJobs are the jobs a run holds: claimed, and not yet ended by a
// written (or given up) outcome. The heartbeat extends their leases.
type heldJobs struct {
	mu sync.Mutex
	// n counts the claims of each job held: the next claim of a job the
	// run snoozed may come before the snooze's outcome is done with.
	n map[string]int
}

func (h *heldJobs) add(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		h.n = make(map[string]int)
	}
	h.n[id]++
}

func (h *heldJobs) remove(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n[id] <= 1 {
		delete(h.n, id)
		return
	}
	h.n[id]--
}

// ids returns the IDs of the held jobs, empty but not nil when there are
// none.
func (h *heldJobs) ids() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	ids := make([]string, 0, len(h.n))
	for id := range h.n {
		ids = append(ids, id)
	}
	return ids
}

// ids returns the IDs of the running jobs.
func (rj *runningJobs) ids() []string {
	rj.mu.Lock()
	defer rj.mu.Unlock()
	ids := make([]string, 0, len(rj.jobs))
	for id := range rj.jobs {
		ids = append(ids, id)
	}
	return ids
}

// revoke cancels the context of the running job id, if any, with the cause
// ErrLeaseLost, and marks it so that its unrecorded outcome is expected.
func (rj *runningJobs) revoke(id string) {
	rj.mu.Lock()
	defer rj.mu.Unlock()
	if jr := rj.jobs[id]; jr != nil {
		jr.revoked.Store(true)
		jr.end(ErrLeaseLost)
	}
}

// progressed returns the running jobs whose reported progress was not
// written yet, with that progress, and those that log, with nil progress.
func (rj *runningJobs) progressed() ([]*jobRun, []*driver.JobProgress) {
	rj.mu.Lock()
	defer rj.mu.Unlock()
	var (
		runs    []*jobRun
		reports []*driver.JobProgress
	)
	for _, j := range rj.jobs {
		p := j.progress.Load()
		switch {
		case p != nil && p != j.progressWritten:
			runs = append(runs, j)
			reports = append(reports, p)
		case j.log.Load() != nil: // the logs may have changed
			runs = append(runs, j)
			reports = append(reports, nil)
		}
	}
	return runs, reports
}
