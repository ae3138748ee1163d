package sluice

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/driver"
)

// Cancel cancels the job with the given ID and returns it as it is now. A
// pending job will never run. A processing job is cancelled in the database
// at once, so that its outcome is never recorded, and its worker's context
// is cancelled with the cause ErrJobCancelled within about a second,
// whichever process runs it. A failed job that holds its sequence
// (SequenceHold) is cancelled too, which lets the rest of the sequence go
// on. Any other finished job returns an error matching ErrStatusConflict,
// an unknown ID one matching ErrNotFound; neither changes anything.
func (c *Client[TTx]) Cancel(ctx context.Context, id string) (*JobRow, error) {
	return c.actOne(ctx, c.exec, actCancel, id)
}

// CancelTx is Cancel inside tx: the job is cancelled if tx commits. A
// worker running the job learns it only after the commit.
func (c *Client[TTx]) CancelTx(ctx context.Context, tx TTx, id string) (*JobRow, error) {
	return c.actOneTx(ctx, tx, actCancel, id)
}

// CancelMany cancels every pending and processing job f selects, and every
// failed one that holds its sequence, as Cancel does, and returns them. f must select by at least one field.
func (c *Client[TTx]) CancelMany(ctx context.Context, f *JobFilter) ([]*JobRow, error) {
	return c.actMany(ctx, c.exec, actCancel, f)
}

// CancelManyTx is CancelMany inside tx.
func (c *Client[TTx]) CancelManyTx(ctx context.Context, tx TTx, f *JobFilter) ([]*JobRow, error) {
	return c.actManyTx(ctx, tx, actCancel, f)
}

// Requeue makes the failed or cancelled job with the given ID pending again,
// due now, with a fresh retry budget (Config.MaxRetries more retries after
// its next attempt), and returns it. Its Errors gain an entry with the
// message "requeued", so that its history shows it. Any other status
// returns an error matching ErrStatusConflict and changes nothing.
func (c *Client[TTx]) Requeue(ctx context.Context, id string) (*JobRow, error) {
	return c.actOne(ctx, c.exec, actRequeue, id)
}

// RequeueTx is Requeue inside tx: the job is requeued if tx commits.
func (c *Client[TTx]) RequeueTx(ctx context.Context, tx TTx, id string) (*JobRow, error) {
	return c.actOneTx(ctx, tx, actRequeue, id)
}

// RequeueMany requeues every failed and cancelled job f selects, as
// Requeue does, and returns them. f must select by at least one field.
func (c *Client[TTx]) RequeueMany(ctx context.Context, f *JobFilter) ([]*JobRow, error) {
	return c.actMany(ctx, c.exec, actRequeue, f)
}

// RequeueManyTx is RequeueMany inside tx.
func (c *Client[TTx]) RequeueManyTx(ctx context.Context, tx TTx, f *JobFilter) ([]*JobRow, error) {
	return c.actManyTx(ctx, tx, actRequeue, f)
}

// Delete deletes the job with the given ID and returns it as it was. A
// processing job is refused with an error matching ErrStatusConflict:
// cancel it first.
func (c *Client[TTx]) Delete(ctx context.Context, id string) (*JobRow, error) {
	return c.actOne(ctx, c.exec, actDelete, id)
}

// DeleteTx is Delete inside tx: the job is gone if tx commits.
func (c *Client[TTx]) DeleteTx(ctx context.Context, tx TTx, id string) (*JobRow, error) {
	return c.actOneTx(ctx, tx, actDelete, id)
}

// DeleteMany deletes every job f selects but processing ones and returns
// them. f must select by at least one field.
func (c *Client[TTx]) DeleteMany(ctx context.Context, f *JobFilter) ([]*JobRow, error) {
	return c.actMany(ctx, c.exec, actDelete, f)
}

// DeleteManyTx is DeleteMany inside tx.
func (c *Client[TTx]) DeleteManyTx(ctx context.Context, tx TTx, f *JobFilter) ([]*JobRow, error) {
	return c.actManyTx(ctx, tx, actDelete, f)
}

// RetryNow makes the pending job with the given ID, waiting for a later
// RunAt (a retry's backoff, a snooze, a schedule), due now, and returns it.
// A pending job already due, or waiting for the jobs it depends on, is
// returned as it is. Any other status returns
// an error matching ErrStatusConflict and changes nothing.
func (c *Client[TTx]) RetryNow(ctx context.Context, id string) (*JobRow, error) {
	return c.actOne(ctx, c.exec, actRetryNow, id)
}

// RetryNowTx is RetryNow inside tx.
func (c *Client[TTx]) RetryNowTx(ctx context.Context, tx TTx, id string) (*JobRow, error) {
	return c.actOneTx(ctx, tx, actRetryNow, id)
}

// RetryNowMany makes every pending job f selects that waits for a later
// RunAt due now, and returns them. f must select by at least one field.
func (c *Client[TTx]) RetryNowMany(ctx context.Context, f *JobFilter) ([]*JobRow, error) {
	return c.actMany(ctx, c.exec, actRetryNow, f)
}

// RetryNowManyTx is RetryNowMany inside tx.
func (c *Client[TTx]) RetryNowManyTx(ctx context.Context, tx TTx, f *JobFilter) ([]*JobRow, error) {
	return c.actManyTx(ctx, tx, actRetryNow, f)
}

// act is one of the operator's actions on jobs.
type act int

const (
	actCancel act = iota
	actRequeue
	actDelete
	actRetryNow
)

func (a act) String() string {
	return [...]string{"cancel", "requeue", "delete", "retry now"}[a]
}

// run runs a through exec.
func (a act) run(ctx context.Context, exec driver.Executor, p *driver.JobActParams) ([]*JobRow, error) {
	switch a {
	case actCancel:
		return exec.JobCancel(ctx, p)
	case actRequeue:
		return exec.JobRequeue(ctx, p)
	case actDelete:
		return exec.JobDelete(ctx, p)
	default:
		return exec.JobRetryNow(ctx, p)
	}
}

// actParams returns the params of a, selecting nothing yet.
func (c *Client[TTx]) actParams() *driver.JobActParams {
	return &driver.JobActParams{Now: c.now(), Retries: retries(c.cfg.MaxRetries)}
}

// actOne runs a on one job. If the job was left alone, it finds out why.
func (c *Client[TTx]) actOne(ctx context.Context, exec driver.Executor, a act, id string) (*JobRow, error) {
	p := c.actParams()
	p.IDs = []string{id}
	rows, err := a.run(ctx, exec, p)
	if err != nil {
		return nil, fmt.Errorf("%s job %s: %w", a, id, err)
	}
	if len(rows) == 1 {
		if a == actCancel && exec == c.exec {
			c.revoke(id)
			c.events.emit(EventCancelled, rows[0], 0)
		}
		if exec == c.exec {
			c.noteAct(a, rows)
		}
		return rows[0], nil
	}
	row, err := exec.JobGet(ctx, &driver.JobGetParams{ID: id})
	if err != nil {
		return nil, fmt.Errorf("%s job %s: %w", a, id, err)
	}
	if a == actRetryNow && row.Status == StatusPending {
		return row, nil // already due
	}
	return nil, fmt.Errorf("%s job %s: %w", a, id, &StatusConflictError{ID: id, Action: a.String(), Status: row.Status})
}

func (c *Client[TTx]) actOneTx(ctx context.Context, tx TTx, a act, id string) (*JobRow, error) {
	if isNil(tx) {
		return nil, fmt.Errorf("%s job %s: %w", a, id, ErrNilTx)
	}
	return c.actOne(ctx, c.driver.UnwrapExecutor(tx), a, id)
}

// actMany runs a on the jobs f selects.
func (c *Client[TTx]) actMany(ctx context.Context, exec driver.Executor, a act, f *JobFilter) ([]*JobRow, error) {
	if f == nil || f.IsZero() {
		return nil, fmt.Errorf("%s jobs: %w", a, &FilterError{Field: "JobFilter", Reason: "selects every job; set at least one field"})
	}
	jf, err := f.params()
	if err == nil {
		err = c.cfg.crypt.checkPayloadFilter(f)
	}
	if err != nil {
		return nil, fmt.Errorf("%s jobs: %w", a, err)
	}
	p := c.actParams()
	p.Filter = *jf
	rows, err := a.run(ctx, exec, p)
	if err != nil {
		return nil, fmt.Errorf("%s jobs: %w", a, err)
	}
	if a == actCancel && exec == c.exec {
		for _, row := range rows {
			c.revoke(row.ID)
			c.events.emit(EventCancelled, row, 0)
		}
	}
	if exec == c.exec {
		c.noteAct(a, rows)
	}
	return rows, nil
}

func (c *Client[TTx]) actManyTx(ctx context.Context, tx TTx, a act, f *JobFilter) ([]*JobRow, error) {
	if isNil(tx) {
		return nil, fmt.Errorf("%s jobs: %w", a, ErrNilTx)
	}
	return c.actMany(ctx, c.driver.UnwrapExecutor(tx), a, f)
}

// IsZero reports whether f sets no field, and so selects every job: the
// bulk actions refuse such a filter.
func (f *JobFilter) IsZero() bool {
	return len(f.Statuses) == 0 && len(f.Topics) == 0 && len(f.Queues) == 0 && f.UniqueKey == "" &&
		f.CreatedFrom.IsZero() && f.CreatedBefore.IsZero() && f.RunAtFrom.IsZero() && f.RunAtBefore.IsZero() &&
		len(f.Tags) == 0 && len(f.Metadata) == 0 && len(f.Keys) == 0 && len(f.GroupIDs) == 0 && len(f.Payload) == 0
}

// revoke stops the job id if this client is running it.
func (c *Client[TTx]) revoke(id string) {
	if r := c.run.Load(); r != nil {
		r.running.revoke(id)
	}
}

// noteAct tells the change feed what a did to rows.
func (c *Client[TTx]) noteAct(a act, rows []*JobRow) {
	if a == actRequeue {
		c.feed.noteRequeued(rows)
		return
	}
	c.feed.note(rows, a == actDelete)
}
