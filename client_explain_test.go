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

// explainer returns a function that requires c's explanation of a job to
// give a reason and contain some words.
func explainer[TTx any](t *testing.T, c *sluice.Client[TTx]) func(id string, want sluice.ExplainReason, words ...string) {
	return func(id string, want sluice.ExplainReason, words ...string) {
		t.Helper()
		ex, err := c.Explain(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, id, ex.Job.ID)
		require.Equal(t, want, ex.Reason, ex.Text)
		for _, w := range words {
			require.Contains(t, ex.Text, w)
		}
	}
}

func TestExplainSaysWhatHoldsAJob(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testExplainSaysWhatHoldsAJob[*sql.Tx], testExplainSaysWhatHoldsAJob[pgx.Tx])
}

func testExplainSaysWhatHoldsAJob[TTx any](t *testing.T, k *kit[TTx]) {
	operator := k.client(t, nil)
	explain := explainer(t, operator)
	enqueue := func(c *sluice.Client[TTx], args sluice.JobArgs, opts *sluice.EnqueueOptions) string {
		t.Helper()
		res, err := c.Enqueue(t.Context(), args, opts)
		require.NoError(t, err)
		return res.Job.ID
	}

	_, err := operator.Explain(t.Context(), "0190f5d2-0000-7000-8000-000000000001")
	require.ErrorIs(t, err, sluice.ErrNotFound)

	// Nobody works topic note yet.
	due := enqueue(operator, noteArgs{N: 1}, nil)
	explain(due, sluice.ReasonNoWorker, `"note"`, `"default"`)
	later := enqueue(operator, noteArgs{N: 2}, &sluice.EnqueueOptions{RunAt: time.Now().Add(time.Hour)})
	explain(later, sluice.ReasonScheduled, "scheduled for")

	// A job held by a client that never recorded itself.
	ghost := enqueue(operator, otherArgs{}, nil)
	claimed, err := k.exec.JobClaim(t.Context(), &driver.JobClaimParams{
		ClientID: "ghost", Queue: "default", Topics: []string{"other"}, Limit: 1,
		Now: time.Now(), LockedUntil: time.Now().Add(time.Minute),
	})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	explain(ghost, sluice.ReasonHolderSilent, "ghost", "no record")

	// One worker, blocked on the first job it gets; failures retry later.
	release := make(chan struct{})
	c := k.client(t, &sluice.Config{
		Queues: map[string]sluice.QueueConfig{"default": {MaxWorkers: 1}},
		Workers: workers(func(ctx context.Context, job *sluice.Job[noteArgs]) error {
			switch job.Args.N {
			case 1:
				<-release
				return nil
			case 3:
				return errors.New("smtp is down")
			}
			return nil
		}),
	})
	free := func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}
	t.Cleanup(free) // before Stop, which waits for the worker
	waitFor(t, c, due, sluice.StatusProcessing)
	explain(due, sluice.ReasonRunning, "running since")
	busy := enqueue(operator, noteArgs{N: 4}, nil)
	behind := enqueue(operator, noteArgs{N: 5}, nil)
	// The ghost's job runs in the queue too, but takes no worker of a
	// client that can work these jobs.
	explain(busy, sluice.ReasonQueueBusy, `all 1 worker(s) of queue "default" on the 1 client(s)`, "next in claim order")
	explain(behind, sluice.ReasonQueueBusy, `1 due job(s) of queue "default" come before it`)
	free()

	failing := enqueue(operator, noteArgs{N: 3}, nil)
	require.Eventually(t, func() bool {
		row, err := operator.Get(t.Context(), failing)
		require.NoError(t, err)
		return row.Attempt == 1 && row.Status == sluice.StatusPending
	}, 10*time.Second, 10*time.Millisecond)
	explain(failing, sluice.ReasonBackoff, "smtp is down", "attempt 1")

	waitFor(t, c, due, sluice.StatusCompleted)
	explain(due, sluice.ReasonFinished, "completed at")
	_, err = operator.Cancel(t.Context(), later)
	require.NoError(t, err)
	explain(later, sluice.ReasonFinished, "cancelled at")
}

func TestExplainCountsFreeWorkers(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testExplainCountsFreeWorkers[*sql.Tx], testExplainCountsFreeWorkers[pgx.Tx])
}

func testExplainCountsFreeWorkers[TTx any](t *testing.T, k *kit[TTx]) {
	operator := k.client(t, nil)
	explain := explainer(t, operator)

	// A client recorded as earlier versions did, without worker counts:
	// whether one of its workers is free cannot be known.
	now := time.Now()
	require.NoError(t, k.exec.ClientRecord(t.Context(), &driver.ClientRecordParams{Client: driver.ClientRow{
		ID: "old", Host: "h", PID: 1, Topics: []string{"other"}, Queues: []string{"default"}, StartedAt: now, SeenAt: now,
	}}))
	res, err := operator.Enqueue(t.Context(), otherArgs{}, nil)
	require.NoError(t, err)
	explain(res.Job.ID, sluice.ReasonQueueBusy, "1 client(s) can work it and run 0 job(s)", "1 of them recorded no worker counts")

	// A client with two idle workers, polling rarely. A job waiting when
	// it starts shows that its first poll is done: after that, it sleeps.
	probe, err := operator.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	// The worker's client hears of no enqueue, so that it leaves due jobs
	// to its next poll.
	worker := startClient(t, k.deaf(), &sluice.Config{
		PollInterval: time.Hour,
		Queues:       map[string]sluice.QueueConfig{"default": {MaxWorkers: 2}},
		Workers:      workers(func(context.Context, *sluice.Job[noteArgs]) error { return nil }),
	})
	waitFor(t, worker, probe.Job.ID, sluice.StatusCompleted)
	res, err = operator.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	explain(res.Job.ID, sluice.ReasonFreeWorker, `2 of the 2 worker(s) of queue "default" on the 1 client(s)`,
		"claimed within about a poll interval", "next in claim order")
}
