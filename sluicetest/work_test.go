package sluicetest_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluicetest"
)

func TestWork(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testWork[*sql.Tx], testWork[pgx.Tx])
}

// testWork works jobs with a worker that fails addresses at first, and
// fires the retry and a delayed job by moving the clock.
func testWork[TTx any](t *testing.T, e *env[TTx]) {
	clock := sluicetest.NewClock(time.Time{})
	var sent []string
	failFirst := map[string]bool{"flaky@example.com": true}
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(_ context.Context, job *sluice.Job[mailArgs]) error {
		if failFirst[job.Args.To] {
			delete(failFirst, job.Args.To)
			return errors.New("mail server busy")
		}
		sent = append(sent, job.Args.To)
		return nil
	}))
	c := e.client(t, &sluice.Config{Workers: workers, Clock: clock.Now})

	row := sluicetest.Work(t, c, mailArgs{To: "a@example.com"}, nil)
	require.Equal(t, sluice.StatusCompleted, row.Status)
	require.Equal(t, []string{"a@example.com"}, sent)

	row = sluicetest.Work(t, c, mailArgs{To: "flaky@example.com"}, nil)
	require.Equal(t, sluice.StatusPending, row.Status, "to be retried")
	require.Equal(t, "mail server busy", row.Errors[0].Error)
	require.Equal(t, clock.Now().Add(time.Minute), row.RunAt, "the first retry a minute later, by the client's clock")
	retried, err := c.WorkNext(t.Context(), sluice.QueueDefault)
	require.NoError(t, err)
	require.Nil(t, retried, "not due before the clock moves")
	clock.Advance(time.Minute)
	retried, err = c.WorkNext(t.Context(), sluice.QueueDefault)
	require.NoError(t, err)
	require.Equal(t, row.ID, retried.ID)
	require.Equal(t, sluice.StatusCompleted, retried.Status)

	// A delayed job is not due: Work says so, and works it once the clock
	// has moved.
	fails(t, func(tb testing.TB) {
		sluicetest.Work(tb, c, mailArgs{To: "later@example.com"}, &sluice.EnqueueOptions{RunAt: clock.Now().Add(time.Hour)})
	}, "is not due")
	clock.Advance(time.Hour)
	// That job is now due before any new one: Work refuses to work
	// another job than its own.
	fails(t, func(tb testing.TB) { sluicetest.Work(tb, c, mailArgs{To: "b@example.com"}, nil) }, "is due before job")
	require.Equal(t, []string{"a@example.com", "flaky@example.com"}, sent, "nothing worked by the failures")
	for range 2 {
		next, err := c.WorkNext(t.Context(), sluice.QueueDefault)
		require.NoError(t, err)
		require.Equal(t, sluice.StatusCompleted, next.Status)
	}

	// A due job of a later priority is claimed after a new one of an
	// earlier priority: it does not stop Work.
	low, err := c.Enqueue(t.Context(), mailArgs{To: "low@example.com"}, &sluice.EnqueueOptions{Priority: 5})
	require.NoError(t, err)
	urgent := sluicetest.Work(t, c, mailArgs{To: "urgent@example.com"}, &sluice.EnqueueOptions{Priority: 1})
	require.NotEqual(t, low.Job.ID, urgent.ID)
	require.Equal(t, sluice.StatusCompleted, urgent.Status)
	next, err := c.WorkNext(t.Context(), sluice.QueueDefault)
	require.NoError(t, err)
	require.Equal(t, low.Job.ID, next.ID)

	fails(t, func(tb testing.TB) { sluicetest.Work(tb, e.client(t, nil), mailArgs{}, nil) }, "no workers")
	fails(t, func(tb testing.TB) {
		sluicetest.Work(tb, c, mailArgs{}, &sluice.EnqueueOptions{Queue: "unknown"})
	}, "unknown queue")
}

func TestWorkTx(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testWorkTx[*sql.Tx], testWorkTx[pgx.Tx])
}

// testWorkTx works a job in the test's transaction, the worker acking it
// there: rolled back, nothing happened, not even the enqueue.
func testWorkTx[TTx any](t *testing.T, e *env[TTx]) {
	var tx TTx
	var c *sluice.Client[TTx]
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[mailArgs]) error {
		return c.AckWithResult(ctx, tx, job, map[string]string{"sent_to": job.Args.To})
	}))
	c = e.client(t, &sluice.Config{Workers: workers})

	tx = e.begin(t)
	row := sluicetest.WorkTx(t, c, tx, mailArgs{To: "a@example.com"}, nil)
	require.Equal(t, sluice.StatusCompleted, row.Status)
	require.JSONEq(t, `{"sent_to": "a@example.com"}`, string(row.Result), "acked by the worker in the transaction")
	require.Empty(t, row.Errors)
	sluicetest.RequireEnqueuedTx[mailArgs](t, c, tx, &sluicetest.RequireOpts{Status: sluice.StatusCompleted})
	e.rollback(t, tx)
	sluicetest.RequireNotEnqueued[mailArgs](t, c, nil)

	tx = e.begin(t)
	row = sluicetest.WorkTx(t, c, tx, mailArgs{To: "b@example.com"}, nil)
	e.commit(t, tx)
	got := sluicetest.RequireEnqueued[mailArgs](t, c, &sluicetest.RequireOpts{Status: sluice.StatusCompleted})
	require.Equal(t, row.ID, got.ID)
}
