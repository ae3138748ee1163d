package sluice

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/completer"
)

// Recorded errors are cut to these sizes, so a worker returning an enormous
// error cannot bloat its job.
const (
	maxErrorBytes = 4 << 10
	maxTraceBytes = 16 << 10
)

// errNotSettled is recorded when a worker acked or nacked its job in a
// transaction and then returned nil, but the transaction did not commit.
var errNotSettled = errors.New("sluice: job was acked or nacked in a transaction that did not commit")

// prepare readies a job its queue's fetcher claimed, to be run with release
// as the function that frees its slot. It decodes the job's arguments on
// the fetcher's goroutine, whose stack stays grown, rather than on the pool
// goroutine that will run it, whose stack the garbage collector shrinks
// while it waits (decoding JSON then grows it again, job after job).
func (r *run) prepare(row *driver.JobRow, release func()) *jobRun {
	jr := &jobRun{row: row, run: r, release: release, unit: r.cfg.Workers.units[row.Topic], mw: r.mw[row.Topic]}
	if jr.unit == nil {
		jr.prepErr = fmt.Errorf("sluice: no worker for topic %q", row.Topic)
		return jr
	}
	jr.prepErr = safeCall(r.jobsCtx, func(context.Context) (err error) {
		jr.job, jr.timeout, err = jr.unit.prepare(jr)
		return err
	})
	return jr
}

// execute works one prepared job on a pool goroutine and queues its
// outcome. It returns false if the job was abandoned while its worker ran
// (see abandon): the goroutine was released from the pool and must end.
func (r *run) execute(jr *jobRun) bool {
	r.events.emit(EventStarted, jr.row, 0)
	stopped, ok, err := r.work(jr)
	if ok {
		r.finish(jr, err, stopped)
	}
	return ok
}

// finish queues the outcome of jr's run and frees its slot.
func (r *run) finish(jr *jobRun, err error, stopped bool) {
	row := jr.row
	if err == nil && jr.settled.Load() {
		// If the worker's transaction committed, this finalization matches
		// nothing; if it rolled back, so did the worker's writes.
		err = errNotSettled
	}
	if err != nil && !stopped && r.cfg.ErrorHandler != nil {
		err = r.handleError(r.hookCtx(jr), jr, err)
	}
	fin := r.outcome(&jr.fin, jr, err, stopped)
	r.completer.Add(completer.Item{Finalize: fin, Done: func(matched bool, werr error) {
		r.held.remove(row.ID)
		if matched {
			now := r.cfg.now()
			r.recordMetrics(row, fin, now)
			took := now.Sub(row.AttemptedAt)
			r.events.emit(outcomeEvent(fin.Status, fin.Snooze), row, took)
			if h := r.cfg.Hooks.JobDone; h != nil && fin.Status.Finished() {
				r.jobDone(h, jr, fin, took)
			}
		}
		if matched && fin.Status == StatusPending {
			r.wakeAt(row.Queue, fin.RunAt) // a retry or snooze due before the next poll
		}
		if matched && row.Key != "" && fin.Status != StatusPending && (row.Sequence != "" || r.keyedFor(row.Queue)) {
			// The key's room, or its sequence's next job, is free: a claim
			// that found fewer jobs than it asked for waits for the poll.
			r.wake(row.Queue, true)
		}
		if matched && row.Task != "" && fin.Status.Finished() {
			r.finished.add(row.GroupID)
			select {
			case r.releaseKick <- struct{}{}:
			default: // a pass is asked for already
			}
		}
		if !matched && werr == nil && !jr.settled.Load() && !jr.revoked.Load() {
			r.cfg.Logger.Warn("sluice: job's lease was lost before it finished; its outcome was not recorded",
				"job_id", row.ID, "topic", row.Topic, "attempt", row.Attempt)
		}
	}})
	jr.release()
	r.jobsWG.Done()
}

// work runs the worker for jr on the calling goroutine and returns whether
// the job was interrupted by Stop, and the worker's error. ok is false if
// the worker ignored its context's end for longer than stopGrace and the
// job was abandoned meanwhile: abandon has finished it instead.
func (r *run) work(jr *jobRun) (stopped, ok bool, err error) {
	if jr.prepErr != nil {
		return false, true, jr.prepErr
	}
	timeout := orDefault(jr.timeout, r.cfg.JobTimeout)
	// outer ends with the timeout or Stop; inner, which the worker gets,
	// ends with outer, or first with a revocation's cause (see
	// runningJobs.revoke, which ends outer too). The grace period hangs on
	// outer, which has inner as a child already, so that it costs no
	// context of its own.
	var outer context.Context
	if timeout > 0 {
		outer, jr.cancel = context.WithTimeout(r.jobsCtx, timeout)
	} else {
		outer, jr.cancel = context.WithCancel(r.jobsCtx)
	}
	var inner context.Context
	inner, jr.revoke = context.WithCancelCause(outer)
	ctx := context.WithValue(inner, jobRunKey{}, jr)
	r.running.track(jr)
	// Once outer ends, the worker has stopGrace to return before the job
	// is abandoned.
	var grace atomic.Pointer[time.Timer]
	unwatch := context.AfterFunc(outer, func() {
		grace.Store(time.AfterFunc(stopGrace, func() { r.abandon(ctx, jr) }))
	})
	err = r.call(ctx, jr)
	if !jr.finished.CompareAndSwap(false, true) {
		return false, false, nil
	}
	unwatch()
	if t := grace.Load(); t != nil {
		t.Stop()
	}
	r.running.untrack(jr)
	jr.end(nil)
	// Stop interrupted the job only if it cancelled the context before the
	// worker returned, and the worker did not ask for a snooze or a cancel.
	return interrupted(ctx, err), true, err
}

// call runs jr's worker with ctx, in its middleware, between the job's
// hooks, turning a panic into a *PanicError.
func (r *run) call(ctx context.Context, jr *jobRun) error {
	hooks := &r.cfg.Hooks
	if hooks.JobStarted == nil && hooks.JobFinished == nil && len(jr.mw) == 0 {
		return safeCall(ctx, func(ctx context.Context) error { return jr.unit.work(ctx, jr.job) })
	}
	if h := hooks.JobStarted; h != nil {
		r.hook("JobStarted", jr, func() { h(ctx, jr.view()) })
	}
	started := time.Now()
	work := func(ctx context.Context) error { return jr.unit.work(ctx, jr.job) }
	if len(jr.mw) > 0 {
		work = wrapWork(jr.mw, jr.view(), work)
	}
	err := safeCall(ctx, work)
	if h := hooks.JobFinished; h != nil {
		r.hook("JobFinished", jr, func() { h(ctx, jr.view(), err, time.Since(started)) })
	}
	return err
}

// hookCtx returns a context for a hook or handler about jr once its
// worker has returned: the job's values, without its end.
func (r *run) hookCtx(jr *jobRun) context.Context {
	return context.WithValue(r.jobsCtx, jobRunKey{}, jr)
}

// jobDone calls the JobDone hook h with jr's final outcome fin.
func (r *run) jobDone(h func(context.Context, *JobDone), jr *jobRun, fin *driver.JobFinalize, took time.Duration) {
	row := *jr.row
	row.Status, row.FinalizedAt, row.LockedBy, row.LockedUntil = fin.Status, fin.FinalizedAt, "", time.Time{}
	if fin.Result != nil {
		row.Result = fin.Result
	}
	if fin.Error != nil {
		row.Errors = append(slices.Clip(row.Errors), *fin.Error)
	}
	if fin.Logs != nil {
		row.Logs, row.LogsDropped = fin.Logs.Records, fin.Logs.Dropped
	}
	done := &JobDone{Job: &row, Event: outcomeEvent(fin.Status, false), Took: took}
	r.hook("JobDone", jr, func() { h(r.hookCtx(jr), done) })
}

// interrupted reports whether a worker's error err comes from Stop ending
// its context ctx, rather than from the worker's own snooze or cancel.
func interrupted(ctx context.Context, err error) bool {
	if err == nil || !errors.Is(context.Cause(ctx), errStopping) {
		return false // checked first: the targets of errors.As cost an allocation
	}
	var (
		snooze    *SnoozeError
		cancelErr *CancelError
	)
	return !errors.As(err, &snooze) && !errors.As(err, &cancelErr)
}

// abandon finishes jr, whose worker has not returned within stopGrace of
// its context ctx ending, in its worker's place, unless the worker returned
// meanwhile. The worker's goroutine is released from the pool and ends
// whenever the worker returns.
func (r *run) abandon(ctx context.Context, jr *jobRun) {
	if !jr.finished.CompareAndSwap(false, true) {
		return
	}
	r.running.untrack(jr)
	jr.cancel()
	cause := context.Cause(ctx)
	err := fmt.Errorf("sluice: worker did not return within %s of its context ending: %w", stopGrace, cause)
	r.cfg.Logger.Error("sluice: abandoned a worker that ignores its context",
		"job_id", jr.row.ID, "topic", jr.row.Topic, "cause", cause)
	r.pool.Release()
	r.finish(jr, err, interrupted(ctx, err))
}

// safeCall calls the worker, turning a panic into a *PanicError.
func safeCall(ctx context.Context, call func(context.Context) error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: string(debug.Stack())}
		}
	}()
	return call(ctx)
}

// outcome turns a worker's result into the finalization of its claim,
// written into fin.
func (r *run) outcome(fin *driver.JobFinalize, jr *jobRun, err error, stopped bool) *driver.JobFinalize {
	row, now := jr.row, r.cfg.now()
	*fin = driver.JobFinalize{ID: row.ID, Attempt: row.Attempt, LockedBy: row.LockedBy, AttemptedAt: row.AttemptedAt,
		GroupID: row.GroupID}
	// The records logged since the last write go with the outcome.
	fin.Logs, _ = jr.unwrittenLogs()
	defer func() {
		fin.Insert = r.notifications(jr, fin)
		// Retention of none: the outcome deletes the job as it records it.
		fin.Delete = fin.Status.Finished() && r.cfg.Retention.keep(row.Topic, row.Queue, fin.Status) == KeepNone
	}()
	if stopped {
		// Handed back unfinished: runs again at once, spending no retry.
		fin.Status, fin.RunAt, fin.Snooze = StatusPending, now, true
		return fin
	}
	var (
		snooze *SnoozeError
		cancel *CancelError
	)
	switch {
	case err == nil:
		fin.Status, fin.FinalizedAt = StatusCompleted, now
		if res := jr.result.Load(); res != nil {
			fin.Result = *res
		}
	case errors.As(err, &snooze):
		fin.Status, fin.RunAt, fin.Snooze = StatusPending, now.Add(snooze.Delay), true
	case errors.As(err, &cancel):
		fin.Status, fin.FinalizedAt, fin.Error = StatusCancelled, now, attemptError(row, now, err)
	default:
		fin.Error = attemptError(row, now, err)
		// A payload no key of this client decrypts will not decrypt on
		// a retry: the job fails for good, its payload kept.
		if row.Attempt <= row.MaxRetries && !errors.Is(err, ErrUnknownKey) && !errors.Is(err, ErrDecrypt) {
			fin.Status, fin.RunAt = StatusPending, r.nextRetry(jr, now)
		} else {
			fin.Status, fin.FinalizedAt = StatusFailed, now
		}
	}
	return fin
}

// nextRetry asks the worker's or the Config's retry policy when jr runs
// again. A policy that panics or returns a time in the past retries at once.
func (r *run) nextRetry(jr *jobRun, now time.Time) (at time.Time) {
	if jr.retryIn > 0 {
		return now.Add(jr.retryIn).UTC().Truncate(time.Microsecond)
	}
	policy := r.cfg.RetryPolicy
	if jr.unit != nil && jr.unit.retryPolicy != nil {
		policy = jr.unit.retryPolicy
	}
	defer func() {
		if v := recover(); v != nil {
			r.cfg.Logger.Error("sluice: retry policy panicked; retrying at once", "job_id", jr.row.ID, "panic", v)
			at = now
		}
	}()
	row := *jr.row
	at = policy.NextRetry(&row, now).UTC().Truncate(time.Microsecond)
	if at.Before(now) {
		at = now
	}
	return at
}

// attemptError records err as the error of row's attempt, with when it
// started and which client ran it.
func attemptError(row *JobRow, at time.Time, err error) *driver.AttemptError {
	ae := &driver.AttemptError{
		Attempt: row.Attempt, At: at, Error: driver.CleanText(err.Error(), maxErrorBytes),
		StartedAt: row.AttemptedAt, ClientID: row.LockedBy,
	}
	var p *PanicError
	if errors.As(err, &p) {
		ae.Trace = driver.CleanText(p.Stack, maxTraceBytes)
	}
	return ae
}
