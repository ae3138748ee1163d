package sluice

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// Batch is a set of jobs enqueued together and watched as one, with
// callback jobs enqueued when all of them are done: OnSuccess when every
// one completed, OnFailure when one failed for good or was cancelled,
// OnComplete either way. Build one with NewBatch and Add, and enqueue it
// with Client.EnqueueBatch or EnqueueBatchTx. A Batch is not safe for
// concurrent use while it is built.
type Batch struct {
	name string
	jobs []EnqueueParams
	open bool
	cb   groupCallbacks
}

// NewBatch returns an empty batch named name: a label to find it by
// (ListBatches), not unique.
func NewBatch(name string) *Batch {
	return &Batch{name: name}
}

// Add adds a job with args and opts (nil for the defaults) and returns b.
// A batch's jobs are independent of each other; each may still depend on
// jobs outside it (EnqueueOptions.DependsOn), and none may have a
// UniqueKey.
func (b *Batch) Add(args JobArgs, opts *EnqueueOptions) *Batch {
	b.jobs = append(b.jobs, EnqueueParams{Args: args, Options: opts})
	return b
}

// KeepOpen makes b take more jobs once enqueued (Client.AddToBatch) until
// Client.CloseBatch closes it; an open batch is never done, so its
// callbacks wait for the close. It returns b. A batch kept open may be
// enqueued with no job.
func (b *Batch) KeepOpen() *Batch {
	b.open = true
	return b
}

// OnSuccess adds a callback: a job enqueued once every job of b has
// completed. It returns b.
func (b *Batch) OnSuccess(args JobArgs, opts *EnqueueOptions) *Batch {
	b.cb.onSuccess = append(b.cb.onSuccess, EnqueueParams{Args: args, Options: opts})
	return b
}

// OnFailure adds a callback: a job enqueued once no job of b is pending or
// running and some failed for good or was cancelled. It returns b.
func (b *Batch) OnFailure(args JobArgs, opts *EnqueueOptions) *Batch {
	b.cb.onFailure = append(b.cb.onFailure, EnqueueParams{Args: args, Options: opts})
	return b
}

// OnComplete adds a callback: a job enqueued once no job of b is pending
// or running, whatever their outcomes. It returns b.
func (b *Batch) OnComplete(args JobArgs, opts *EnqueueOptions) *Batch {
	b.cb.onComplete = append(b.cb.onComplete, EnqueueParams{Args: args, Options: opts})
	return b
}

// BatchResult is an enqueued batch.
type BatchResult struct {
	// ID is the batch's ID, each job's JobRow.GroupID.
	ID string
	// Jobs are its jobs, in the order they were added.
	Jobs []*JobRow
}

// EnqueueBatch enqueues b atomically: its jobs, each carrying the batch's
// ID (JobRow.GroupID), and the batch's row with its callbacks, in one
// transaction. The callbacks are enqueued in the transaction that records
// the outcome finishing the batch (or, when a rescue, a cancel or a delete
// finished it, by the next pass of a running client), so each runs
// exactly once, even when the worker of the last job is killed. A batch
// that cannot be (no job unless kept open, more than MaxGroupJobs, a job
// with a UniqueKey, a job or callback that cannot be enqueued) returns an
// error matching ErrInvalidGroup, a *GroupError naming the job ("job 3")
// or callback ("OnSuccess[0]"), and writes nothing. Enqueue middleware does
// not run.
func (c *Client[TTx]) EnqueueBatch(ctx context.Context, b *Batch) (*BatchResult, error) {
	return c.enqueueBatch(ctx, c.exec, false, b)
}

// EnqueueBatchTx is EnqueueBatch inside tx: the batch exists if and only
// if tx commits.
func (c *Client[TTx]) EnqueueBatchTx(ctx context.Context, tx TTx, b *Batch) (*BatchResult, error) {
	if isNil(tx) {
		return nil, fmt.Errorf("enqueue batch: %w", ErrNilTx)
	}
	return c.enqueueBatch(ctx, c.driver.UnwrapExecutor(tx), true, b)
}

func (c *Client[TTx]) enqueueBatch(ctx context.Context, exec driver.Executor, inTx bool, b *Batch) (*BatchResult, error) {
	if b == nil {
		return nil, fmt.Errorf("enqueue batch: %w", &GroupError{Reason: "nil batch"})
	}
	if err := checkGroupName(b.name); err != nil {
		return nil, fmt.Errorf("enqueue batch: %w", err)
	}
	if len(b.jobs) == 0 && !b.open {
		return nil, fmt.Errorf("enqueue batch: %w", &GroupError{Name: b.name, Reason: "no job (a batch kept open may start empty)"})
	}
	now := c.now()
	inserts, err := c.batchInserts(b.name, b.jobs, now)
	if err != nil {
		return nil, fmt.Errorf("enqueue batch: %w", err)
	}
	cb, err := c.callbackInserts(b.name, &b.cb, now)
	if err != nil {
		return nil, fmt.Errorf("enqueue batch: %w", err)
	}
	g := driver.GroupRow{ID: c.cfg.NewJobID(), Kind: KindBatch, Name: b.name, CreatedAt: now, Open: b.open, Callbacks: cb}
	rows, err := c.insertGroup(ctx, exec, inTx, g, inserts, now)
	if err != nil {
		return nil, fmt.Errorf("enqueue batch %q: %w", b.name, err)
	}
	return &BatchResult{ID: g.ID, Jobs: rows}, nil
}

// batchInserts checks a batch's jobs and returns their inserts.
func (c *Client[TTx]) batchInserts(name string, jobs []EnqueueParams, now time.Time) ([]*driver.JobInsert, error) {
	if len(jobs) > MaxGroupJobs {
		return nil, &GroupError{Name: name, Reason: fmt.Sprintf("%d jobs, more than %d", len(jobs), MaxGroupJobs)}
	}
	inserts := make([]*driver.JobInsert, len(jobs))
	for i, p := range jobs {
		ins, err := c.newInsert(p.Args, p.Options, now)
		if err == nil && ins.UniqueKey != "" {
			err = &OptionsError{Field: "UniqueKey", Reason: "a job of a batch has no unique key"}
		}
		if err != nil {
			return nil, &GroupError{Name: name, Task: fmt.Sprintf("job %d", i), Part: "Jobs", Index: i, Err: err}
		}
		inserts[i] = ins
	}
	return inserts, nil
}

// AddToBatch enqueues jobs into the batch id, which must be open
// (Batch.KeepOpen), atomically with the check that it is: an error
// matching ErrGroupClosed when it is closed, ErrNotFound when there is no
// such batch (a workflow's ID names none), and a *GroupError as
// EnqueueBatch returns for a job that cannot be; nothing is written then.
func (c *Client[TTx]) AddToBatch(ctx context.Context, id string, jobs ...EnqueueParams) ([]*JobRow, error) {
	return c.addToBatch(ctx, c.exec, false, id, jobs)
}

// AddToBatchTx is AddToBatch inside tx.
func (c *Client[TTx]) AddToBatchTx(ctx context.Context, tx TTx, id string, jobs ...EnqueueParams) ([]*JobRow, error) {
	if isNil(tx) {
		return nil, fmt.Errorf("add to batch: %w", ErrNilTx)
	}
	return c.addToBatch(ctx, c.driver.UnwrapExecutor(tx), true, id, jobs)
}

func (c *Client[TTx]) addToBatch(ctx context.Context, exec driver.Executor, inTx bool, id string, jobs []EnqueueParams) ([]*JobRow, error) {
	gid, err := groupID(id)
	if err != nil {
		return nil, fmt.Errorf("add to batch: %w", err)
	}
	if len(jobs) == 0 {
		return []*JobRow{}, nil
	}
	now := c.now()
	inserts, err := c.batchInserts(gid, jobs, now)
	if err != nil {
		return nil, fmt.Errorf("add to batch: %w", err)
	}
	if err := c.resolveSequences(ctx, exec, inserts); err != nil {
		return nil, fmt.Errorf("add to batch %s: %w", gid, err)
	}
	held := !inTx && c.events.holdEnqueued(inserts)
	rows, err := exec.GroupAdd(ctx, &driver.GroupAddParams{ID: gid, Jobs: inserts})
	if err != nil {
		if held {
			c.events.releaseEnqueued(inserts, nil, time.Time{})
		}
		if errors.Is(err, driver.ErrGroupClosed) {
			err = ErrGroupClosed
			// A workflow is never open; its ID names no batch.
			if g, gerr := c.exec.GroupGet(ctx, &driver.GroupGetParams{ID: gid}); gerr == nil && g.Kind != KindBatch {
				err = ErrNotFound
			}
		}
		return nil, fmt.Errorf("add to batch %s: %w", gid, err)
	}
	c.noteInserted(inTx, held, inserts, rows, now)
	return rows, nil
}

// CloseBatch closes the open batch id, so that it is done, and its
// callbacks are enqueued, once none of its jobs is pending or running (at
// once when none is). Closing a closed batch changes nothing. An unknown
// ID returns an error matching ErrNotFound.
func (c *Client[TTx]) CloseBatch(ctx context.Context, id string) (*Group, error) {
	gid, err := groupID(id)
	if err != nil {
		return nil, fmt.Errorf("close batch: %w", err)
	}
	g, err := c.exec.GroupClose(ctx, &driver.GroupCloseParams{ID: gid, Now: c.now()})
	if err == nil && g.Kind != KindBatch {
		err = driver.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("close batch %s: %w", gid, err)
	}
	return c.getGroup(ctx, KindBatch, gid)
}

// GetBatch returns the batch id with its jobs and their counts by status;
// an error matching ErrNotFound when there is none.
func (c *Client[TTx]) GetBatch(ctx context.Context, id string) (*Group, error) {
	return c.getGroup(ctx, KindBatch, id)
}

// ListBatches returns the batches f selects, newest first.
func (c *Client[TTx]) ListBatches(ctx context.Context, f *GroupFilter) (*GroupList, error) {
	return c.listGroups(ctx, KindBatch, f)
}

// CancelBatch cancels the pending and running jobs of the batch id, as
// CancelWorkflow cancels a workflow's tasks, and returns them. A closed
// batch is then done and its callbacks are enqueued. An unknown ID
// returns an error matching ErrNotFound.
func (c *Client[TTx]) CancelBatch(ctx context.Context, id string) ([]*JobRow, error) {
	return c.cancelGroup(ctx, KindBatch, id)
}

// RetryBatch runs the failed and cancelled jobs of the batch id again,
// with a fresh retry budget, atomically, and returns them; the batch is
// done again once none is live, and its callbacks are enqueued again
// then. An unknown ID returns an error matching ErrNotFound.
func (c *Client[TTx]) RetryBatch(ctx context.Context, id string) ([]*JobRow, error) {
	return c.retryGroup(ctx, KindBatch, id)
}
