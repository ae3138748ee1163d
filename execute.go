package sluice

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/completer"
	"github.com/sluicehq/sluice/internal/fetcher"
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

// execute works one claimed job and queues its outcome.
func (c *Client[TTx]) execute(r *run, f *fetcher.Fetcher, row *driver.JobRow) {
	jr := &jobRun{row: row, unit: c.cfg.Workers.units[row.Topic]}
	c.emit(EventStarted, row, 0)
	err, stopped := c.work(r, jr)
	if err == nil && jr.settled.Load() {
		// If the worker's transaction committed, this finalization matches
		// nothing; if it rolled back, so did the worker's writes.
		err = errNotSettled
	}
	fin := c.outcome(jr, err, stopped)
	r.completer.Add(completer.Item{Finalize: fin, Done: func(matched bool, werr error) {
		if matched {
			c.emit(outcomeEvent(fin.Status, fin.Snooze), row, c.now().Sub(row.AttemptedAt))
		}
		if matched && fin.Status == StatusPending {
			r.wakeAt(row.Queue, fin.RunAt) // a retry or snooze due before the next poll
		}
		if !matched && werr == nil && !jr.settled.Load() && !jr.revoked.Load() {
			c.cfg.Logger.Warn("sluice: job's lease was lost before it finished; its outcome was not recorded",
				"job_id", row.ID, "topic", row.Topic, "attempt", row.Attempt)
		}
	}})
	f.Done()
}

// work runs the worker for jr and returns its error, and whether the job
// was interrupted by Stop.
func (c *Client[TTx]) work(r *run, jr *jobRun) (err error, stopped bool) {
	if jr.unit == nil {
		return fmt.Errorf("sluice: no worker for topic %q", jr.row.Topic), false
	}
	var (
		call    func(context.Context) error
		timeout time.Duration
	)
	if err := safeCall(r.jobsCtx, func(context.Context) (err error) {
		call, timeout, err = jr.unit.prepare(jr)
		return err
	}); err != nil {
		return err, false
	}
	timeout = orDefault(timeout, c.cfg.JobTimeout)
	var (
		ctx    context.Context
		cancel context.CancelFunc
	)
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(r.jobsCtx, timeout)
	} else {
		ctx, cancel = context.WithCancel(r.jobsCtx)
	}
	defer cancel()
	ctx, revoke := context.WithCancelCause(context.WithValue(ctx, jobRunKey{}, jr))
	defer revoke(nil)
	defer r.running.track(jr, revoke)()
	done := make(chan error, 1)
	go func() { done <- safeCall(ctx, call) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		select {
		case err = <-done:
		case <-time.After(stopGrace):
			err = fmt.Errorf("sluice: worker did not return within %s of its context ending: %w", stopGrace, context.Cause(ctx))
			c.cfg.Logger.Error("sluice: abandoned a worker that ignores its context",
				"job_id", jr.row.ID, "topic", jr.row.Topic, "cause", context.Cause(ctx))
		}
	}
	// Stop interrupted the job only if it cancelled the context before the
	// worker returned, and the worker did not ask for a snooze or a cancel.
	var (
		snooze    *SnoozeError
		cancelErr *CancelError
	)
	stopped = err != nil && errors.Is(context.Cause(ctx), errStopping) &&
		!errors.As(err, &snooze) && !errors.As(err, &cancelErr)
	return err, stopped
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

// outcome turns a worker's result into the finalization of its claim.
func (c *Client[TTx]) outcome(jr *jobRun, err error, stopped bool) *driver.JobFinalize {
	row, now := jr.row, c.now()
	fin := &driver.JobFinalize{ID: row.ID, Attempt: row.Attempt, LockedBy: row.LockedBy}
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
		if row.Attempt <= row.MaxRetries {
			fin.Status, fin.RunAt = StatusPending, c.nextRetry(jr, now)
		} else {
			fin.Status, fin.FinalizedAt = StatusFailed, now
		}
	}
	return fin
}

// nextRetry asks the worker's or the Config's retry policy when jr runs
// again. A policy that panics or returns a time in the past retries at once.
func (c *Client[TTx]) nextRetry(jr *jobRun, now time.Time) (at time.Time) {
	policy := c.cfg.RetryPolicy
	if jr.unit != nil && jr.unit.retryPolicy != nil {
		policy = jr.unit.retryPolicy
	}
	defer func() {
		if v := recover(); v != nil {
			c.cfg.Logger.Error("sluice: retry policy panicked; retrying at once", "job_id", jr.row.ID, "panic", v)
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
		Attempt: row.Attempt, At: at, Error: cleanText(err.Error(), maxErrorBytes),
		StartedAt: row.AttemptedAt, ClientID: row.LockedBy,
	}
	var p *PanicError
	if errors.As(err, &p) {
		ae.Trace = cleanText(p.Stack, maxTraceBytes)
	}
	return ae
}

// cleanText makes s storable in every driver: NUL characters, which
// Postgres cannot store in text or jsonb, are dropped, and s is cut to at
// most n bytes.
func cleanText(s string, n int) string {
	return truncate(strings.ReplaceAll(s, "\x00", ""), n)
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "… (truncated)"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
