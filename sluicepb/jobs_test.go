package sluicepb_test

import (
	"context"
	"testing"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluicepb"
)

// TestEnqueueTxRunsAfterCommit enqueues a job in a PocketBase transaction
// that stays open well past the client's quick re-polls after an enqueue,
// with polling effectively off: the worker must start the job once the
// transaction commits, without waiting for a poll.
func TestEnqueueTxRunsAfterCommit(t *testing.T) {
	t.Parallel()
	ran := make(chan ChargeArgs, 1)
	p := newApp(t, &sluicepb.Config{PollInterval: time.Hour}, func(j *sluicepb.Jobs) {
		require.NoError(t, sluicepb.AddWorker(j, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[ChargeArgs]) error {
			ran <- job.Args
			return nil
		})))
	})
	p.serve(t)
	ctx := t.Context()
	var id string
	err := p.app.RunInTransaction(func(txApp core.App) error {
		res, err := p.jobs.EnqueueTx(ctx, txApp, ChargeArgs{Order: "o1", Amount: 5}, nil)
		if err != nil {
			return err
		}
		id = res.Job.ID
		time.Sleep(time.Second) // longer than the re-polls after an enqueue
		return nil
	})
	require.NoError(t, err)
	select {
	case args := <-ran:
		require.Equal(t, ChargeArgs{Order: "o1", Amount: 5}, args)
	case <-time.After(20 * time.Second):
		t.Fatal("the job did not run after its transaction committed")
	}
	c, err := p.jobs.Client()
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		row, err := c.Get(ctx, id)
		return err == nil && row.Status == sluice.StatusCompleted
	}, 20*time.Second, 10*time.Millisecond)
}

// TestEnqueueTxRollback: a job enqueued in a transaction that rolls back
// never exists, nor does the record written beside it.
func TestEnqueueTxRollback(t *testing.T) {
	t.Parallel()
	p := newApp(t, nil, nil)
	ctx := t.Context()
	users, err := p.app.FindCollectionByNameOrId("users")
	require.NoError(t, err)
	err = p.app.RunInTransaction(func(txApp core.App) error {
		rec := core.NewRecord(users)
		rec.SetEmail("rollback@example.com")
		rec.SetPassword("1234567890")
		if err := txApp.Save(rec); err != nil {
			return err
		}
		if _, err := p.jobs.EnqueueTx(ctx, txApp, ChargeArgs{Order: "o1"}, nil); err != nil {
			return err
		}
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)
	c, err := p.jobs.Client()
	require.NoError(t, err)
	list, err := c.List(ctx, &sluice.ListFilter{})
	require.NoError(t, err)
	require.Empty(t, list.Jobs)
	n, err := p.app.CountRecords(users)
	require.NoError(t, err)
	require.Zero(t, n)
}

// TestNotInTransaction: the Tx methods refuse an app outside a
// transaction with a typed error and write nothing.
func TestNotInTransaction(t *testing.T) {
	t.Parallel()
	p := newApp(t, nil, nil)
	ctx := t.Context()
	_, err := p.jobs.EnqueueTx(ctx, p.app, ChargeArgs{Order: "o1"}, nil)
	require.ErrorIs(t, err, sluicepb.ErrNotInTransaction)
	_, err = p.jobs.EnqueueManyTx(ctx, p.app, []sluice.EnqueueParams{{Args: ChargeArgs{}}})
	require.ErrorIs(t, err, sluicepb.ErrNotInTransaction)
	require.ErrorIs(t, p.jobs.Ack(ctx, p.app, nil), sluicepb.ErrNotInTransaction)
	require.ErrorIs(t, p.jobs.Nack(ctx, p.app, nil, context.Canceled), sluicepb.ErrNotInTransaction)
	_, err = sluicepb.Tx(nil)
	require.ErrorIs(t, err, sluicepb.ErrNotInTransaction)
	err = p.app.AuxRunInTransaction(func(txApp core.App) error {
		_, err := p.jobs.EnqueueTx(ctx, txApp, ChargeArgs{Order: "o1"}, nil)
		return err
	})
	require.ErrorIs(t, err, sluicepb.ErrNotInTransaction, "a transaction on auxiliary.db is not one on data.db")
	c, err := p.jobs.Client()
	require.NoError(t, err)
	list, err := c.List(ctx, &sluice.ListFilter{})
	require.NoError(t, err)
	require.Empty(t, list.Jobs)
}
