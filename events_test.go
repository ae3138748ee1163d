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
	"github.com/sluicehq/sluice/driver"
)

// next returns the next event of sub, failing after a while.
func next(t *testing.T, sub *sluice.Subscription) sluice.Event {
	t.Helper()
	select {
	case ev := <-sub.C:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
		return sluice.Event{}
	}
}

func TestSubscribeReportsTheLifecycle(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testSubscribeReportsTheLifecycle[*sql.Tx], testSubscribeReportsTheLifecycle[pgx.Tx])
}

func testSubscribeReportsTheLifecycle[TTx any](t *testing.T, k *kit[TTx]) {
	c := k.client(t, &sluice.Config{
		RetryPolicy: quickRetry{},
		Workers: workers(func(ctx context.Context, job *sluice.Job[noteArgs]) error {
			switch {
			case job.Args.N == 1:
				return nil
			case job.Args.N == 2 && job.Attempt == 1:
				return sluice.Snooze(0)
			case job.Args.N == 2:
				return errors.New("boom")
			}
			return sluice.Cancel(nil)
		}),
	})
	all := c.Subscribe()
	failedOnly := c.Subscribe(sluice.EventFailed)
	defer all.Close()
	defer failedOnly.Close()

	// One job at a time, so that its events come in order, enqueued first.
	want := map[int][]sluice.EventKind{
		1: {sluice.EventEnqueued, sluice.EventStarted, sluice.EventCompleted},
		2: {sluice.EventEnqueued, sluice.EventStarted, sluice.EventSnoozed, sluice.EventStarted,
			sluice.EventRetried, sluice.EventStarted, sluice.EventFailed},
		3: {sluice.EventEnqueued, sluice.EventStarted, sluice.EventCancelled},
	}
	for n := 1; n <= 3; n++ {
		res, err := c.Enqueue(t.Context(), noteArgs{N: n}, &sluice.EnqueueOptions{MaxRetries: 1})
		require.NoError(t, err)
		var got []sluice.EventKind
		for range want[n] {
			ev := next(t, all)
			require.Equal(t, res.Job.ID, ev.Job.ID)
			require.False(t, ev.At.IsZero())
			require.GreaterOrEqual(t, ev.Duration, time.Duration(0))
			got = append(got, ev.Kind)
		}
		require.Equal(t, want[n], got, "job %d", n)
	}
	ev := next(t, failedOnly)
	require.Equal(t, sluice.EventFailed, ev.Kind)
	select {
	case ev := <-failedOnly.C:
		t.Fatalf("unexpected %s event", ev.Kind)
	default:
	}

	// An operator's cancel is reported; an enqueue in a transaction is not.
	tx := k.tx(t)
	_, err := c.EnqueueTx(t.Context(), tx, noteArgs{N: 1}, &sluice.EnqueueOptions{RunAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	k.end(t, tx, true)
	later, err := c.Enqueue(t.Context(), noteArgs{N: 1}, &sluice.EnqueueOptions{RunAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, sluice.EventEnqueued, next(t, all).Kind)
	_, err = c.Cancel(t.Context(), later.Job.ID)
	require.NoError(t, err)
	ev = next(t, all)
	require.Equal(t, sluice.EventCancelled, ev.Kind)
	require.Equal(t, later.Job.ID, ev.Job.ID)
	require.Zero(t, all.Dropped())

	all.Close()
	all.Close()
	_, open := <-all.C
	require.False(t, open, "Close closes C")
}

// Workers claim jobs as soon as they are committed, often before Enqueue
// has returned; each job's enqueued event still comes first.
func TestEnqueuedComesBeforeEveryOtherEvent(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testEnqueuedComesBeforeEveryOtherEvent[*sql.Tx], testEnqueuedComesBeforeEveryOtherEvent[pgx.Tx])
}

func testEnqueuedComesBeforeEveryOtherEvent[TTx any](t *testing.T, k *kit[TTx]) {
	c := k.client(t, &sluice.Config{
		PollInterval: 5 * time.Millisecond,
		Workers: workers(func(ctx context.Context, job *sluice.Job[noteArgs]) error {
			return nil
		}),
	})
	sub := c.SubscribeBuffered(10_000)
	defer sub.Close()

	const singles, batches, batchSize = 100, 10, 20
	for i := range singles {
		_, err := c.Enqueue(t.Context(), noteArgs{N: i}, nil)
		require.NoError(t, err)
	}
	for range batches {
		params := make([]sluice.EnqueueParams, batchSize)
		for i := range params {
			params[i] = sluice.EnqueueParams{Args: noteArgs{N: i}}
		}
		_, err := c.EnqueueMany(t.Context(), params)
		require.NoError(t, err)
	}

	seen := map[string][]sluice.EventKind{}
	completed := 0
	for completed < singles+batches*batchSize {
		ev := next(t, sub)
		seen[ev.Job.ID] = append(seen[ev.Job.ID], ev.Kind)
		if ev.Kind == sluice.EventCompleted {
			completed++
		}
	}
	for id, kinds := range seen {
		require.Equal(t, []sluice.EventKind{sluice.EventEnqueued, sluice.EventStarted, sluice.EventCompleted},
			kinds, "job %s", id)
	}
	require.Zero(t, sub.Dropped())
}

func TestSlowSubscriberNeverSlowsWorkers(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testSlowSubscriberNeverSlowsWorkers[*sql.Tx], testSlowSubscriberNeverSlowsWorkers[pgx.Tx])
}

func testSlowSubscriberNeverSlowsWorkers[TTx any](t *testing.T, k *kit[TTx]) {
	c := k.client(t, &sluice.Config{
		Workers: workers(func(context.Context, *sluice.Job[noteArgs]) error { return nil }),
	})
	stuck := c.SubscribeBuffered(1) // never read
	defer stuck.Close()
	params := make([]sluice.EnqueueParams, 50)
	for i := range params {
		params[i] = sluice.EnqueueParams{Args: noteArgs{N: i}}
	}
	res, err := c.EnqueueMany(t.Context(), params)
	require.NoError(t, err)
	for _, r := range res {
		waitFor(t, c, r.Job.ID, sluice.StatusCompleted)
	}
	// 50 enqueued, 50 started, 50 completed: one fits, the rest are counted.
	require.Eventually(t, func() bool { return stuck.Dropped() == 149 }, 5*time.Second, 10*time.Millisecond,
		"dropped %d", stuck.Dropped())
}

func TestRescuerReportsTheJobsItTakesBack(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testRescuerReportsTheJobsItTakesBack[*sql.Tx], testRescuerReportsTheJobsItTakesBack[pgx.Tx])
}

func testRescuerReportsTheJobsItTakesBack[TTx any](t *testing.T, k *kit[TTx]) {
	c := k.client(t, &sluice.Config{
		RescueInterval: 10 * time.Millisecond,
		Workers:        workers(func(context.Context, *sluice.Job[noteArgs]) error { return nil }),
	})
	rescued := c.Subscribe(sluice.EventRescued)
	defer rescued.Close()
	// Jobs of a topic this client has no worker for, held by a client that
	// vanished: one may run again, the other has no retries left.
	again, err := c.Enqueue(t.Context(), otherArgs{}, nil)
	require.NoError(t, err)
	dead, err := c.Enqueue(t.Context(), otherArgs{}, &sluice.EnqueueOptions{MaxRetries: sluice.NoRetries})
	require.NoError(t, err)
	now := time.Now()
	claimed, err := k.exec.JobClaim(t.Context(), &driver.JobClaimParams{
		ClientID: "vanished", Queue: "default", Topics: []string{"other"}, Limit: 2,
		Now: now, LockedUntil: now.Add(50 * time.Millisecond),
	})
	require.NoError(t, err)
	require.Len(t, claimed, 2)

	got := map[string]sluice.Event{}
	for len(got) < 2 {
		ev := next(t, rescued)
		require.Equal(t, sluice.EventRescued, ev.Kind)
		got[ev.Job.ID] = ev
	}
	require.Equal(t, sluice.StatusPending, got[again.Job.ID].Job.Status)
	require.Equal(t, sluice.StatusFailed, got[dead.Job.ID].Job.Status)
	for _, ev := range got {
		require.GreaterOrEqual(t, ev.Duration, 50*time.Millisecond, "the lost attempt started before its lease ended")
		require.Len(t, ev.Job.Errors, 1)
		lost := ev.Job.Errors[0]
		require.Equal(t, "lease expired", lost.Error)
		require.Equal(t, "vanished", lost.ClientID, "the rescue records who held the job")
		require.True(t, lost.StartedAt.Equal(ev.Job.AttemptedAt), "and when the lost attempt started")
		require.Equal(t, "vanished", ev.Job.AttemptedBy)
		row, err := c.Get(t.Context(), ev.Job.ID)
		require.NoError(t, err)
		require.Equal(t, ev.Job.Errors, row.Errors, "the event carries the job as the rescue left it")
	}
}
