package sluice_test

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

// ackWorker writes an order and acks (or nacks) its job in one transaction.
type ackWorker[TTx any] struct {
	sluice.WorkerDefaults[noteArgs]
	k      *kit[TTx]
	client func() *sluice.Client[TTx]
	// before, when set, runs before the transaction begins.
	before func(job *sluice.Job[noteArgs])
	// act runs in the transaction after the business write; commit decides
	// whether the transaction commits; ret is returned from Work.
	act    func(ctx context.Context, tx TTx, job *sluice.Job[noteArgs]) error
	commit bool
	ret    func(job *sluice.Job[noteArgs]) error
	errs   chan error
}

func (w *ackWorker[TTx]) Work(ctx context.Context, job *sluice.Job[noteArgs]) error {
	if w.before != nil {
		w.before(job)
	}
	tx, err := w.k.begin(ctx)
	if err != nil {
		return err
	}
	if err := w.k.order(ctx, tx, job.ID); err != nil {
		_ = w.k.rollback(ctx, tx)
		return err
	}
	actErr := w.act(ctx, tx, job)
	w.errs <- actErr
	if actErr != nil || !w.commit {
		_ = w.k.rollback(ctx, tx)
	} else if err := w.k.commit(ctx, tx); err != nil {
		return err
	}
	if w.ret != nil {
		return w.ret(job)
	}
	return actErr
}

func startAckWorker[TTx any](t *testing.T, k *kit[TTx], w *ackWorker[TTx], cfgs ...*sluice.Config) *sluice.Client[TTx] {
	t.Helper()
	w.k, w.errs = k, make(chan error, 10)
	ws := sluice.NewWorkers()
	sluice.AddWorker(ws, w)
	cfg := &sluice.Config{}
	if len(cfgs) > 0 {
		cfg = cfgs[0]
	}
	cfg.Workers, cfg.RetryPolicy = ws, quickRetry{}
	c := k.client(t, cfg)
	w.client = func() *sluice.Client[TTx] { return c }
	return c
}

func TestAckInTransactionCompletesWithTheBusinessWrite(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testAckInTransactionCompletesWithTheBusinessWrite[*sql.Tx], testAckInTransactionCompletesWithTheBusinessWrite[pgx.Tx])
}

func testAckInTransactionCompletesWithTheBusinessWrite[TTx any](t *testing.T, k *kit[TTx]) {
	w := &ackWorker[TTx]{commit: true}
	w.act = func(ctx context.Context, tx TTx, job *sluice.Job[noteArgs]) error {
		return w.client().AckWithResult(ctx, tx, job, map[string]int{"total": 42})
	}
	c := startAckWorker(t, k, w)
	res, err := c.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	row := waitFor(t, c, res.Job.ID, sluice.StatusCompleted)
	require.NoError(t, <-w.errs)
	require.JSONEq(t, `{"total":42}`, string(row.Result))
	require.Equal(t, 1, row.Attempt)
	require.Empty(t, row.Errors)
	require.Equal(t, 1, k.orders(t, res.Job.ID))
}

func TestAckRolledBackRetriesTheJob(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testAckRolledBackRetriesTheJob[*sql.Tx], testAckRolledBackRetriesTheJob[pgx.Tx])
}

func testAckRolledBackRetriesTheJob[TTx any](t *testing.T, k *kit[TTx]) {
	w := &ackWorker[TTx]{}
	w.act = func(ctx context.Context, tx TTx, job *sluice.Job[noteArgs]) error {
		w.commit = job.Attempt > 1 // the first attempt's transaction rolls back
		return w.client().Ack(ctx, tx, job)
	}
	w.ret = func(*sluice.Job[noteArgs]) error { return nil }
	c := startAckWorker(t, k, w)
	res, err := c.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	row := waitFor(t, c, res.Job.ID, sluice.StatusCompleted)
	require.Equal(t, 2, row.Attempt)
	require.Len(t, row.Errors, 1)
	require.Contains(t, row.Errors[0].Error, "did not commit")
	require.Equal(t, 1, k.orders(t, res.Job.ID))
}

func TestNackInTransaction(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testNackInTransaction[*sql.Tx], testNackInTransaction[pgx.Tx])
}

func testNackInTransaction[TTx any](t *testing.T, k *kit[TTx]) {
	w := &ackWorker[TTx]{commit: true}
	w.act = func(ctx context.Context, tx TTx, job *sluice.Job[noteArgs]) error {
		if job.Attempt == 1 {
			return w.client().Nack(ctx, tx, job, errors.New("stock not ready"))
		}
		return w.client().Nack(ctx, tx, job, sluice.Cancel(errors.New("gave up")))
	}
	w.ret = func(*sluice.Job[noteArgs]) error { return nil }
	c := startAckWorker(t, k, w)
	res, err := c.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	row := waitFor(t, c, res.Job.ID, sluice.StatusCancelled)
	require.Equal(t, 2, row.Attempt)
	require.Len(t, row.Errors, 2)
	require.Equal(t, "stock not ready", row.Errors[0].Error)
	require.Contains(t, row.Errors[1].Error, "gave up")
	require.Equal(t, 2, k.orders(t, res.Job.ID), "each attempt's business write committed with its Nack")
	require.ErrorIs(t, c.Nack(t.Context(), k.tx(t), nil, nil), sluice.ErrNilError)
}

func TestAckAfterLeaseLostFailsAndChangesNothing(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testAckAfterLeaseLostFailsAndChangesNothing[*sql.Tx], testAckAfterLeaseLostFailsAndChangesNothing[pgx.Tx])
}

func testAckAfterLeaseLostFailsAndChangesNothing[TTx any](t *testing.T, k *kit[TTx]) {
	taken := make(chan struct{})
	w := &ackWorker[TTx]{commit: true}
	w.before = func(job *sluice.Job[noteArgs]) {
		if job.Attempt == 1 {
			<-taken // the lease is lost while the worker runs
		}
	}
	w.act = func(ctx context.Context, tx TTx, job *sluice.Job[noteArgs]) error {
		return w.client().Ack(ctx, tx, job)
	}
	clock := &fakeClock{}
	c := startAckWorker(t, k, w, &sluice.Config{
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
	require.Equal(t, 1, k.orders(t, res.Job.ID), "the lost attempt's business write rolled back")
}

func TestAckRejectsNilTxAndForeignJobs(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testAckRejectsNilTxAndForeignJobs[*sql.Tx], testAckRejectsNilTxAndForeignJobs[pgx.Tx])
}

func testAckRejectsNilTxAndForeignJobs[TTx any](t *testing.T, k *kit[TTx]) {
	c := k.client(t, nil)
	var nilTx TTx
	require.ErrorIs(t, c.Ack(t.Context(), nilTx, &sluice.Job[noteArgs]{}), sluice.ErrNilTx)
	tx := k.tx(t)
	require.ErrorIs(t, c.Ack(t.Context(), tx, &sluice.Job[noteArgs]{}), sluice.ErrLeaseLost)
	require.ErrorIs(t, c.Ack(t.Context(), tx, nil), sluice.ErrLeaseLost)
}

func TestSnoozeInTransactionThenWorkMoreRunsEachClaimOnce(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testSnoozeInTransactionThenWorkMoreRunsEachClaimOnce[*sql.Tx], testSnoozeInTransactionThenWorkMoreRunsEachClaimOnce[pgx.Tx])
}

func testSnoozeInTransactionThenWorkMoreRunsEachClaimOnce[TTx any](t *testing.T, k *kit[TTx]) {
	w := &ackWorker[TTx]{commit: true}
	var running, overlap atomic.Int32
	w.before = func(*sluice.Job[noteArgs]) {
		if running.Add(1) > 1 {
			overlap.Add(1)
		}
	}
	w.act = func(ctx context.Context, tx TTx, job *sluice.Job[noteArgs]) error {
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
	c := startAckWorker(t, k, w, &sluice.Config{PollInterval: 10 * time.Millisecond})
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
