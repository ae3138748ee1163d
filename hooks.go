package sluice

import (
	"context"
	"errors"
	"time"
)

// Hooks are functions a client calls as things happen, each optional.
// They are called synchronously on the client's goroutines (a job's hooks
// on its worker's), so they must be quick and must not block; a hook that
// panics is recovered and logged. Unset hooks cost nothing.
type Hooks struct {
	// ClientStarted is called when Start has started the client, with its
	// ID (the LockedBy of the jobs it claims).
	ClientStarted func(ctx context.Context, clientID string)
	// ClientStopped is called when Stop has stopped the client, before
	// Stop returns.
	ClientStopped func(ctx context.Context, clientID string)
	// JobStarted is called before a job's worker (and its middleware)
	// runs, with the job's context.
	JobStarted func(ctx context.Context, job *JobRow)
	// JobFinished is called when the worker has returned, before the
	// outcome is recorded, with its error (nil when it succeeded; a
	// *PanicError when it panicked) and how long it ran.
	JobFinished func(ctx context.Context, job *JobRow, err error, took time.Duration)
	// JobDone is called once a job's final outcome was recorded by this
	// client: completed, failed for good, or cancelled by its worker (see
	// JobDone). Outcomes written by Ack or Nack in a worker's own
	// transaction are not reported, since the client cannot know whether
	// that transaction committed; Config.Webhooks are, being written in it.
	JobDone func(ctx context.Context, done *JobDone)
}

// JobDone is a job's final outcome, as Hooks.JobDone and webhooks tell
// it.
type JobDone struct {
	// Job is the job as its outcome left it: Status completed, failed or
	// cancelled, FinalizedAt set, Result and Errors as stored.
	Job *JobRow
	// Event is EventCompleted, EventFailed or EventCancelled.
	Event EventKind
	// Took is how long the last attempt ran.
	Took time.Duration
}

// ErrorHandler is called with a job whose worker returned an error, or
// panicked (err is then a *PanicError), or was abandoned for ignoring its
// context, before the outcome is decided; not for Snooze or Cancel, which
// are decisions already, nor for a job handed back by Stop. It may log,
// alert, or decide the outcome with its result. Set it in
// Config.ErrorHandler. It runs on the worker's goroutine, with the job's
// context (whose deadline may have passed) and its row.
type ErrorHandler func(ctx context.Context, job *JobRow, err error) ErrorDecision

// ErrorDecision is what an ErrorHandler decides. The zero value leaves the
// error to the retry policy.
type ErrorDecision struct {
	// Cancel ends the job as cancelled, with its error recorded, never to
	// be retried.
	Cancel bool
	// RetryIn, when positive, retries the job after this delay instead of
	// the retry policy's, if it has retries left.
	RetryIn time.Duration
}

// handleError asks the Config's ErrorHandler about err, the error of jr's
// worker, and returns the error that decides the outcome.
func (r *run) handleError(ctx context.Context, jr *jobRun, err error) error {
	h := r.cfg.ErrorHandler
	if h == nil || err == nil {
		return err
	}
	var (
		snooze *SnoozeError
		cancel *CancelError
	)
	if errors.As(err, &snooze) || errors.As(err, &cancel) {
		return err
	}
	var d ErrorDecision
	r.hook("ErrorHandler", jr, func() { d = h(ctx, jr.view(), err) })
	switch {
	case d.Cancel:
		return Cancel(err)
	case d.RetryIn > 0:
		jr.retryIn = d.RetryIn
	}
	return err
}

// hook calls fn, a hook or handler named name, recovering and logging a
// panic.
func (r *run) hook(name string, jr *jobRun, fn func()) {
	defer func() {
		if v := recover(); v != nil {
			args := []any{"hook", name, "panic", v}
			if jr != nil {
				args = append(args, "job_id", jr.row.ID)
			}
			r.cfg.Logger.Error("sluice: a hook panicked", args...)
		}
	}()
	fn()
}
