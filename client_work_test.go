package sluice_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

func TestWorkNext(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testWorkNext[*sql.Tx], testWorkNext[pgx.Tx])
}

// testWorkNext works jobs one at a time without Start: a success, a
// failure retried when the clock reaches its retry, a delayed job, and a
// panic.
func testWorkNext[TTx any](t *testing.T, k *kit[TTx]) {
	ctx := t.Context()
	clock := &fakeClock{}
	var calls []int
	c := k.client(t, &sluice.Config{Clock: clock.Now, MaxRetries: 1, Workers: workers(
		func(_ context.Context, job *sluice.Job[noteArgs]) error {
			calls = append(calls, job.Args.N)
			switch job.Args.N {
			case 1:
				return errors.New("not yet")
			case 2:
				panic("boom")
			}
			return nil
		})})
	// A client with workers that was never started: WorkNext needs no Start.
	require.NoError(t, c.Stop(ctx))

	none, err := c.WorkNext(ctx, sluice.QueueDefault)
	require.NoError(t, err)
	require.Nil(t, none, "nothing due")

	ok, err := c.Enqueue(ctx, noteArgs{N: 0}, nil)
	require.NoError(t, err)
	row, err := c.WorkNext(ctx, sluice.QueueDefault)
	require.NoError(t, err)
	require.Equal(t, ok.Job.ID, row.ID)
	require.Equal(t, sluice.StatusCompleted, row.Status)
	require.Equal(t, 1, row.Attempt)

	failing, err := c.Enqueue(ctx, noteArgs{N: 1}, nil)
	require.NoError(t, err)
	row, err = c.WorkNext(ctx, sluice.QueueDefault)
	require.NoError(t, err)
	require.Equal(t, failing.Job.ID, row.ID)
	require.Equal(t, sluice.StatusPending, row.Status)
	require.WithinDuration(t, clock.Now().Add(time.Minute), row.RunAt, 5*time.Second, "the first retry after a minute")
	require.Len(t, row.Errors, 1)
	none, err = c.WorkNext(ctx, sluice.QueueDefault)
	require.NoError(t, err)
	require.Nil(t, none, "the retry is not due yet")
	clock.Advance(time.Minute)
	row, err = c.WorkNext(ctx, sluice.QueueDefault)
	require.NoError(t, err)
	require.Equal(t, sluice.StatusFailed, row.Status, "its one retry used up")
	require.Equal(t, 2, row.Attempt)

	later, err := c.Enqueue(ctx, noteArgs{N: 3}, &sluice.EnqueueOptions{RunAt: clock.Now().Add(time.Hour)})
	require.NoError(t, err)
	none, err = c.WorkNext(ctx, sluice.QueueDefault)
	require.NoError(t, err)
	require.Nil(t, none)
	clock.Advance(time.Hour)
	row, err = c.WorkNext(ctx, sluice.QueueDefault)
	require.NoError(t, err)
	require.Equal(t, later.Job.ID, row.ID)
	require.Equal(t, sluice.StatusCompleted, row.Status)

	panics, err := c.Enqueue(ctx, noteArgs{N: 2}, &sluice.EnqueueOptions{MaxRetries: sluice.NoRetries})
	require.NoError(t, err)
	row, err = c.WorkNext(ctx, sluice.QueueDefault)
	require.NoError(t, err)
	require.Equal(t, panics.Job.ID, row.ID)
	require.Equal(t, sluice.StatusFailed, row.Status)
	require.Contains(t, row.Errors[0].Error, "boom")
	require.NotEmpty(t, row.Errors[0].Trace)

	require.Equal(t, []int{0, 1, 1, 3, 2}, calls)

	insertOnly := k.client(t, nil)
	_, err = insertOnly.WorkNext(ctx, sluice.QueueDefault)
	require.ErrorIs(t, err, sluice.ErrNoWorkers)
	var nilTx TTx
	_, err = c.WorkNextTx(ctx, nilTx, sluice.QueueDefault)
	require.ErrorIs(t, err, sluice.ErrNilTx)
}

func TestWorkNextTx(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testWorkNextTx[*sql.Tx], testWorkNextTx[pgx.Tx])
}

// testWorkNextTx works a job in the caller's transaction, with the worker
// acking in it: a rollback undoes the claim, the outcome and the worker's
// writes; a commit keeps them all.
func testWorkNextTx[TTx any](t *testing.T, k *kit[TTx]) {
	ctx := t.Context()
	var tx TTx
	var c *sluice.Client[TTx]
	c = k.client(t, &sluice.Config{Workers: workers(func(ctx context.Context, job *sluice.Job[noteArgs]) error {
		if err := k.order(ctx, tx, job.ID); err != nil {
			return err
		}
		return c.Ack(ctx, tx, job)
	})})
	require.NoError(t, c.Stop(ctx))
	res, err := c.Enqueue(ctx, noteArgs{}, nil)
	require.NoError(t, err)
	id := res.Job.ID

	for _, commit := range []bool{false, true} {
		tx = k.tx(t)
		row, err := c.WorkNextTx(ctx, tx, sluice.QueueDefault)
		require.NoError(t, err)
		require.Equal(t, id, row.ID)
		require.Equal(t, sluice.StatusCompleted, row.Status, "in the transaction")
		require.Empty(t, row.Errors, "the worker's ack, not a failure: the client's outcome matched nothing")
		k.end(t, tx, commit)
		got, err := c.Get(ctx, id)
		require.NoError(t, err)
		if !commit {
			require.Equal(t, sluice.StatusPending, got.Status, "rolled back: never claimed")
			require.Zero(t, got.Attempt)
			require.Zero(t, k.orders(t, id))
			continue
		}
		require.Equal(t, sluice.StatusCompleted, got.Status)
		require.Equal(t, 1, k.orders(t, id))
	}
}

func TestWorkNextFlow(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testWorkNextFlow[*sql.Tx], testWorkNextFlow[pgx.Tx])
}

// testWorkNextFlow: WorkNext obeys a paused queue, and works a job that
// waited for another once that one completed.
func testWorkNextFlow[TTx any](t *testing.T, k *kit[TTx]) {
	ctx := t.Context()
	c := k.client(t, &sluice.Config{Workers: workers(
		func(_ context.Context, job *sluice.Job[noteArgs]) error { return nil })})
	require.NoError(t, c.Stop(ctx))

	first, err := c.Enqueue(ctx, noteArgs{N: 1}, nil)
	require.NoError(t, err)
	then, err := c.Enqueue(ctx, noteArgs{N: 2}, &sluice.EnqueueOptions{DependsOn: []string{first.Job.ID}})
	require.NoError(t, err)

	_, err = c.PauseQueue(ctx, sluice.QueueDefault)
	require.NoError(t, err)
	none, err := c.WorkNext(ctx, sluice.QueueDefault)
	require.NoError(t, err)
	require.Nil(t, none, "a paused queue yields nothing")
	_, err = c.ResumeQueue(ctx, sluice.QueueDefault)
	require.NoError(t, err)

	row, err := c.WorkNext(ctx, sluice.QueueDefault)
	require.NoError(t, err)
	require.Equal(t, first.Job.ID, row.ID)
	require.Equal(t, sluice.StatusCompleted, row.Status)
	row, err = c.WorkNext(ctx, sluice.QueueDefault)
	require.NoError(t, err)
	require.NotNil(t, row, "the waiting job, released")
	require.Equal(t, then.Job.ID, row.ID)
	require.Equal(t, sluice.StatusCompleted, row.Status)
}
