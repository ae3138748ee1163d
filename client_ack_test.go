package sluice_test

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

// ackWorker writes an order and acks (or nacks) its job in one transaction.
type ackWorker struct {
	sluice.WorkerDefaults[noteArgs]
	db     *sql.DB
	client func() *sluice.Client[*sql.Tx]
	// before, when set, runs before the transaction begins.
	before func(job *sluice.Job[noteArgs])
	// act runs in the transaction after the business write; commit decides
	// whether the transaction commits; ret is returned from Work.
	act    func(ctx context.Context, tx *sql.Tx, job *sluice.Job[noteArgs]) error
	commit bool
	ret    func(job *sluice.Job[noteArgs]) error
	errs   chan error
}

func (w *ackWorker) Work(ctx context.Context, job *sluice.Job[noteArgs]) error {
	if w.before != nil {
		w.before(job)
	}
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO orders (job_id) VALUES (?)`, job.ID); err != nil {
		_ = tx.Rollback()
		return err
	}
	actErr := w.act(ctx, tx, job)
	w.errs <- actErr
	if actErr != nil || !w.commit {
		_ = tx.Rollback()
	} else if err := tx.Commit(); err != nil {
		return err
	}
	if w.ret != nil {
		return w.ret(job)
	}
	return actErr
}

func startAckWorker(t *testing.T, b *bundle, w *ackWorker, cfgs ...*sluice.Config) *sluice.Client[*sql.Tx] {
	t.Helper()
	w.db, w.errs = b.db, make(chan error, 10)
	ws := sluice.NewWorkers()
	sluice.AddWorker(ws, w)
	cfg := &sluice.Config{}
	if len(cfgs) > 0 {
		cfg = cfgs[0]
	}
	cfg.Workers, cfg.RetryPolicy = ws, quickRetry{}
	c := b.client(t, cfg)
	w.client = func() *sluice.Client[*sql.Tx] { return c }
	return c
}

func (b *bundle) orders(t *testing.T, jobID string) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.QueryRow(`SELECT count(*) FROM orders WHERE job_id = ?`, jobID).Scan(&n))
	return n
}

func TestAckInTransactionCompletesWithTheBusinessWrite(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	w := &ackWorker{commit: true}
	w.act = func(ctx context.Context, tx *sql.Tx, job *sluice.Job[noteArgs]) error {
		return w.client().AckWithResult(ctx, tx, job, map[string]int{"total": 42})
	}
	c := startAckWorker(t, b, w)
	res, err := c.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	row := waitFor(t, c, res.Job.ID, sluice.StatusCompleted)
	require.NoError(t, <-w.errs)
	require.JSONEq(t, `{"total":42}`, string(row.Result))
	require.Equal(t, 1, row.Attempt)
	require.Empty(t, row.Errors)
	require.Equal(t, 1, b.orders(t, res.Job.ID))
}

func TestAckRolledBackRetriesTheJob(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	w := &ackWorker{}
	w.act = func(ctx context.Context, tx *sql.Tx, job *sluice.Job[noteArgs]) error {
		w.commit = job.Attempt > 1 // the first attempt's transaction rolls back
		return w.client().Ack(ctx, tx, job)
	}
	w.ret = func(*sluice.Job[noteArgs]) error { return nil }
	c := startAckWorker(t, b, w)
	res, err := c.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	row := waitFor(t, c, res.Job.ID, sluice.StatusCompleted)
	require.Equal(t, 2, row.Attempt)
	require.Len(t, row.Errors, 1)
	require.Contains(t, row.Errors[0].Error, "did not commit")
	require.Equal(t, 1, b.orders(t, res.Job.ID))
}

func TestNackInTransaction(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	w := &ackWorker{commit: true}
	w.act = func(ctx context.Context, tx *sql.Tx, job *sluice.Job[noteArgs]) error {
		if job.Attempt == 1 {
			return w.client().Nack(ctx, tx, job, errors.New("stock not ready"))
		}
		return w.client().Nack(ctx, tx, job, sluice.Cancel(errors.New("gave up")))
	}
	w.ret = func(*sluice.Job[noteArgs]) error { return nil }
	c := startAckWorker(t, b, w)
	res, err := c.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	row := waitFor(t, c, res.Job.ID, sluice.StatusCancelled)
	require.Equal(t, 2, row.Attempt)
	require.Len(t, row.Errors, 2)
	require.Equal(t, "stock not ready", row.Errors[0].Error)
	require.Contains(t, row.Errors[1].Error, "gave up")
	require.Equal(t, 2, b.orders(t, res.Job.ID), "each attempt's business write committed with its Nack")
	require.ErrorIs(t, c.Nack(t.Context(), &sql.Tx{}, nil, nil), sluice.ErrNilError)
}

func TestAckAfterLeaseLostFailsAndChangesNothing(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	taken := make(chan struct{})
	w := &ackWorker{commit: true}
	w.before = func(job *sluice.Job[noteArgs]) {
		if job.Attempt == 1 {
			<-taken // the lease is lost while the worker runs
		}
	}
	w.act = func(ctx context.Context, tx *sql.Tx, job *sluice.Job[noteArgs]) error {
		return w.client().Ack(ctx, tx, job)
	}
	clock := &fakeClock{}
	c := startAckWorker(t, b, w, &sluice.Config{
		Clock: clock.Now, LeaseDuration: time.Hour, HeartbeatInterval: 59 * time.Minute,
		RescueInterval: 10 * time.Millisecond,
	})
	res, err := c.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	waitFor(t, c, res.Job.ID, sluice.StatusProcessing)
	// The lease expires; the rescuer takes the job back and it runs again
	// while the first attempt's worker is still busy.
	clock.Advance(2 * time.Hour)
	row := waitFor(t, c, res.Job.ID, sluice.StatusCompleted)
	require.NoError(t, <-w.errs, "the second attempt acks")
	close(taken)
	require.ErrorIs(t, <-w.errs, sluice.ErrLeaseLost, "the first attempt's Ack is fenced off")
	require.Equal(t, 2, row.Attempt)
	require.Equal(t, "lease expired", row.Errors[0].Error)
	require.Equal(t, 1, b.orders(t, res.Job.ID), "the lost attempt's business write rolled back")
}

func TestAckRejectsNilTxAndForeignJobs(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	c := b.client(t, nil)
	require.ErrorIs(t, c.Ack(t.Context(), nil, &sluice.Job[noteArgs]{}), sluice.ErrNilTx)
	tx, err := b.db.BeginTx(t.Context(), nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	require.ErrorIs(t, c.Ack(t.Context(), tx, &sluice.Job[noteArgs]{}), sluice.ErrLeaseLost)
	require.ErrorIs(t, c.Ack(t.Context(), tx, nil), sluice.ErrLeaseLost)
}

func TestSnoozeInTransactionThenWorkMoreRunsEachClaimOnce(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	w := &ackWorker{commit: true}
	var running, overlap atomic.Int32
	w.before = func(*sluice.Job[noteArgs]) {
		if running.Add(1) > 1 {
			overlap.Add(1)
		}
	}
	w.act = func(ctx context.Context, tx *sql.Tx, job *sluice.Job[noteArgs]) error {
		if job.Attempt == 1 {
			return w.client().Nack(ctx, tx, job, sluice.Snooze(0))
		}
		return w.client().Ack(ctx, tx, job)
	}
	// After committing the snooze, the first run keeps working a while, and
	// then returns as though it had completed the job.
	w.ret = func(job *sluice.Job[noteArgs]) error {
		if job.Attempt == 1 {
			time.Sleep(100 * time.Millisecond)
		}
		running.Add(-1)
		return nil
	}
	c := startAckWorker(t, b, w, &sluice.Config{PollInterval: 10 * time.Millisecond})
	res, err := c.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	row := waitFor(t, c, res.Job.ID, sluice.StatusCompleted)
	require.Equal(t, 2, row.Attempt)
	require.Empty(t, row.Errors, "the first run's late outcome must not land on the second claim")
	time.Sleep(150 * time.Millisecond) // let the first run's late outcome be written
	row, err = c.Get(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, sluice.StatusCompleted, row.Status)
	require.Empty(t, row.Errors)
}
