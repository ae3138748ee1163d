package sluice

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sluicehq/sluice/driver"
)

// Ack completes job inside tx, the transaction of the worker's own writes:
// if tx commits, the job is completed together with those writes; if it
// rolls back, neither happened, and the worker should return an error so
// that the job is retried. Ack is fenced: if this client no longer holds
// the job (its lease expired and it was taken back, or it was cancelled or
// already finished), it returns an error matching ErrLeaseLost and changes
// nothing, and the caller must roll tx back. The worker returns after
// committing: the outcome the client records when a worker returns is fenced
// too, so it matches nothing once the worker's transaction has committed.
func (c *Client[TTx]) Ack(ctx context.Context, tx TTx, job JobRef) error {
	return c.settle(ctx, tx, job, nil, nil)
}

// AckWithResult is Ack that also stores result, encoded as JSON, as the
// job's result. A nil result stores none.
func (c *Client[TTx]) AckWithResult(ctx context.Context, tx TTx, job JobRef, result any) error {
	if result == nil {
		return c.settle(ctx, tx, job, nil, nil)
	}
	encoded, err := json.Marshal(result)
	if err == nil {
		err = driver.CheckJSON(encoded)
	}
	if err != nil {
		return fmt.Errorf("ack: result: %w", &ArgsError{Err: err})
	}
	return c.settle(ctx, tx, job, nil, encoded)
}

// Nack records jobErr as the failure of job's attempt inside tx, and
// schedules its retry per the retry policy, or fails it once its retries
// are used up. jobErr may be Snooze(d) or Cancel(err), as a worker would
// return them. Like Ack it is fenced: ErrLeaseLost means nothing changed.
func (c *Client[TTx]) Nack(ctx context.Context, tx TTx, job JobRef, jobErr error) error {
	if jobErr == nil {
		return fmt.Errorf("nack: %w", ErrNilError)
	}
	return c.settle(ctx, tx, job, jobErr, nil)
}

func (c *Client[TTx]) settle(ctx context.Context, tx TTx, job JobRef, jobErr error, result []byte) error {
	op := "ack"
	if jobErr != nil {
		op = "nack"
	}
	if isNil(tx) {
		return fmt.Errorf("%s: %w", op, ErrNilTx)
	}
	if job == nil || job.handle() == nil {
		return fmt.Errorf("%s: %w: not a job handed to a worker", op, ErrLeaseLost)
	}
	jr := job.handle()
	fin := jr.run.outcome(new(driver.JobFinalize), jr, jobErr, false)
	fin.Result = result
	matched, err := c.driver.UnwrapExecutor(tx).JobFinalize(ctx, &driver.JobFinalizeParams{Jobs: []*driver.JobFinalize{fin}})
	if err != nil {
		return fmt.Errorf("%s job %s: %w", op, jr.row.ID, err)
	}
	if !matched[0] {
		return fmt.Errorf("%s job %s: %w", op, jr.row.ID, ErrLeaseLost)
	}
	jr.settled.Store(true)
	return nil
}
