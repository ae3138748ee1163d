package sluice_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

// outcome is what a worker returns, and what becomes of its job.
type outcome struct {
	name     string
	retries  int
	work     func(ctx context.Context, job *sluice.Job[noteArgs]) error
	status   sluice.JobStatus
	attempt  int
	errCount int
	errHas   string
	// maxRetries, when not 0, is the job's MaxRetries at the end.
	maxRetries int
}

func TestWorkerOutcomes(t *testing.T) {
	t.Parallel()
	tests := []outcome{
		{
			name:    "nil completes",
			work:    func(context.Context, *sluice.Job[noteArgs]) error { return nil },
			status:  sluice.StatusCompleted,
			attempt: 1,
		},
		{
			name: "fails once then succeeds",
			work: func(_ context.Context, job *sluice.Job[noteArgs]) error {
				if job.Attempt == 1 {
					return errors.New("flaky network")
				}
				return nil
			},
			status: sluice.StatusCompleted, attempt: 2, errCount: 1, errHas: "flaky network",
		},
		{
			name:    "retries exhausted fails",
			retries: 2,
			work:    func(context.Context, *sluice.Job[noteArgs]) error { return errors.New("always") },
			status:  sluice.StatusFailed, attempt: 3, errCount: 3, errHas: "always",
		},
		{
			name:    "no retries fails at once",
			retries: sluice.NoRetries,
			work:    func(context.Context, *sluice.Job[noteArgs]) error { return errors.New("once") },
			status:  sluice.StatusFailed, attempt: 1, errCount: 1, errHas: "once",
		},
		{
			name: "snooze spends no retry",
			work: func(_ context.Context, job *sluice.Job[noteArgs]) error {
				if len(job.Errors) == 0 && job.Attempt == 1 && job.RunAt.Equal(job.CreatedAt) {
					return sluice.Snooze(time.Millisecond)
				}
				return nil
			},
			status: sluice.StatusCompleted, attempt: 2, maxRetries: sluice.DefaultMaxRetries + 1,
		},
		{
			name:    "cancel ends without retry",
			retries: 5,
			work: func(context.Context, *sluice.Job[noteArgs]) error {
				return sluice.Cancel(errors.New("customer gone"))
			},
			status: sluice.StatusCancelled, attempt: 1, errCount: 1, errHas: "customer gone",
		},
		{
			name:    "panic is recorded with its stack",
			retries: sluice.NoRetries,
			work:    func(context.Context, *sluice.Job[noteArgs]) error { panic("boom") },
			status:  sluice.StatusFailed, attempt: 1, errCount: 1, errHas: "boom",
		},
		{
			name:    "enormous error is cut",
			retries: sluice.NoRetries,
			work: func(context.Context, *sluice.Job[noteArgs]) error {
				return errors.New(strings.Repeat("é", 1<<20))
			},
			status: sluice.StatusFailed, attempt: 1, errCount: 1, errHas: "(truncated)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			onBothDrivers(t, testWorkerOutcome[*sql.Tx](tt), testWorkerOutcome[pgx.Tx](tt))
		})
	}
}

func testWorkerOutcome[TTx any](tt outcome) func(*testing.T, *kit[TTx]) {
	return func(t *testing.T, k *kit[TTx]) {
		c := k.client(t, &sluice.Config{Workers: workers(tt.work), RetryPolicy: quickRetry{}})
		res, err := c.Enqueue(t.Context(), noteArgs{N: 1}, &sluice.EnqueueOptions{MaxRetries: tt.retries})
		require.NoError(t, err)
		row := waitFor(t, c, res.Job.ID, tt.status)
		require.Equal(t, tt.attempt, row.Attempt)
		if tt.maxRetries != 0 {
			require.Equal(t, tt.maxRetries, row.MaxRetries, "a snooze gives its retry back")
		}
		require.Len(t, row.Errors, tt.errCount)
		require.False(t, row.FinalizedAt.IsZero())
		require.Empty(t, row.LockedBy)
		if tt.errCount > 0 {
			last := row.Errors[len(row.Errors)-1]
			require.Contains(t, last.Error, tt.errHas)
			for i, e := range row.Errors {
				require.Equal(t, i+1, e.Attempt)
			}
			require.LessOrEqual(t, len(last.Error), 4096)
		}
		if strings.Contains(tt.name, "panic") {
			require.Contains(t, row.Errors[0].Trace, "work_test.go")
		}
	}
}

func TestDefaultRetryWaitsOneMinute(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testDefaultRetryWaitsOneMinute[*sql.Tx], testDefaultRetryWaitsOneMinute[pgx.Tx])
}

func testDefaultRetryWaitsOneMinute[TTx any](t *testing.T, k *kit[TTx]) {
	c := k.client(t, &sluice.Config{Workers: workers(func(context.Context, *sluice.Job[noteArgs]) error {
		return errors.New("later")
	})})
	res, err := c.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	var row *sluice.JobRow
	require.Eventually(t, func() bool {
		row, err = c.Get(t.Context(), res.Job.ID)
		require.NoError(t, err)
		return len(row.Errors) == 1
	}, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, sluice.StatusPending, row.Status)
	require.Equal(t, time.Minute, row.RunAt.Sub(row.Errors[0].At))
}

type slowArgs struct{}

func (slowArgs) Topic() string { return "slow" }

type timeoutWorker struct {
	sluice.WorkerDefaults[slowArgs]
	ignore bool
}

func (w *timeoutWorker) Timeout(*sluice.Job[slowArgs]) time.Duration { return 20 * time.Millisecond }
func (w *timeoutWorker) Work(ctx context.Context, _ *sluice.Job[slowArgs]) error {
	if w.ignore {
		time.Sleep(2 * time.Second) // ignores its context
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

func TestTimeoutCancelsTheJobContext(t *testing.T) {
	t.Parallel()
	for name, ignore := range map[string]bool{"worker returns": false, "worker ignores its context": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			onBothDrivers(t, testTimeoutCancelsTheJobContext[*sql.Tx](ignore), testTimeoutCancelsTheJobContext[pgx.Tx](ignore))
		})
	}
}

func testTimeoutCancelsTheJobContext[TTx any](ignore bool) func(*testing.T, *kit[TTx]) {
	return func(t *testing.T, k *kit[TTx]) {
		w := sluice.NewWorkers()
		sluice.AddWorker(w, &timeoutWorker{ignore: ignore})
		c := k.client(t, &sluice.Config{Workers: w})
		res, err := c.Enqueue(t.Context(), slowArgs{}, &sluice.EnqueueOptions{MaxRetries: sluice.NoRetries})
		require.NoError(t, err)
		row := waitFor(t, c, res.Job.ID, sluice.StatusFailed)
		require.Contains(t, row.Errors[0].Error, "deadline exceeded")
		if ignore {
			require.Contains(t, row.Errors[0].Error, "did not return")
			time.Sleep(2 * time.Second) // let the worker that ignored its context end before the leak check
		}
	}
}

func TestClaimsOnlyItsOwnTopicsAndQueues(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testClaimsOnlyItsOwnTopicsAndQueues[*sql.Tx], testClaimsOnlyItsOwnTopicsAndQueues[pgx.Tx])
}

func testClaimsOnlyItsOwnTopicsAndQueues[TTx any](t *testing.T, k *kit[TTx]) {
	var notes, others atomic.Int32
	queues := map[string]sluice.QueueConfig{sluice.QueueDefault: {MaxWorkers: 2}, "bulk": {MaxWorkers: 1}}
	notesClient := k.client(t, &sluice.Config{Queues: queues, Workers: workers(func(context.Context, *sluice.Job[noteArgs]) error {
		notes.Add(1)
		return nil
	})})
	w := sluice.NewWorkers()
	sluice.AddWorker(w, sluice.WorkFunc(func(context.Context, *sluice.Job[otherArgs]) error {
		others.Add(1)
		return nil
	}))
	othersClient := k.client(t, &sluice.Config{Queues: queues, Workers: w})
	var ids []string
	for i := range 10 {
		opts := &sluice.EnqueueOptions{}
		if i%2 == 0 {
			opts.Queue = "bulk"
		}
		r1, err := notesClient.Enqueue(t.Context(), noteArgs{N: i}, opts)
		require.NoError(t, err)
		r2, err := notesClient.Enqueue(t.Context(), otherArgs{}, opts)
		require.NoError(t, err)
		ids = append(ids, r1.Job.ID, r2.Job.ID)
	}
	for _, id := range ids {
		row := waitFor(t, othersClient, id, sluice.StatusCompleted)
		require.Contains(t, []string{sluice.QueueDefault, "bulk"}, row.Queue)
	}
	require.EqualValues(t, 10, notes.Load())
	require.EqualValues(t, 10, others.Load())
}

func TestPriorityThenRunAtOrder(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testPriorityThenRunAtOrder[*sql.Tx], testPriorityThenRunAtOrder[pgx.Tx])
}

func testPriorityThenRunAtOrder[TTx any](t *testing.T, k *kit[TTx]) {
	inserter := k.client(t, nil)
	base := time.Now().Add(-time.Hour)
	enqueue := func(n, priority int, age time.Duration) {
		_, err := inserter.Enqueue(t.Context(), noteArgs{N: n}, &sluice.EnqueueOptions{Priority: priority, RunAt: base.Add(-age)})
		require.NoError(t, err)
	}
	enqueue(4, 5, 3*time.Minute)
	enqueue(2, 1, time.Minute)
	enqueue(1, 1, 2*time.Minute)
	enqueue(3, 2, 5*time.Minute)
	order := make(chan int, 4)
	k.client(t, &sluice.Config{
		Queues: map[string]sluice.QueueConfig{sluice.QueueDefault: {MaxWorkers: 1}},
		Workers: workers(func(_ context.Context, job *sluice.Job[noteArgs]) error {
			order <- job.Args.N
			return nil
		}),
	})
	for want := 1; want <= 4; want++ {
		require.Equal(t, want, <-order)
	}
}

func TestDelayedJobWaitsForItsRunAt(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testDelayedJobWaitsForItsRunAt[*sql.Tx], testDelayedJobWaitsForItsRunAt[pgx.Tx])
}

func testDelayedJobWaitsForItsRunAt[TTx any](t *testing.T, k *kit[TTx]) {
	clock := &fakeClock{}
	ran := make(chan struct{}, 1)
	c := k.client(t, &sluice.Config{Clock: clock.Now, PollInterval: 10 * time.Millisecond,
		Workers: workers(func(context.Context, *sluice.Job[noteArgs]) error {
			ran <- struct{}{}
			return nil
		})})
	res, err := c.Enqueue(t.Context(), noteArgs{}, &sluice.EnqueueOptions{RunAt: clock.Now().Add(time.Hour)})
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond) // ten polls
	row, err := c.Get(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, sluice.StatusPending, row.Status)
	require.Empty(t, ran)
	clock.Advance(time.Hour)
	waitFor(t, c, res.Job.ID, sluice.StatusCompleted)
}

func TestWakeUpsDoNotWaitForThePoll(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testWakeUpsDoNotWaitForThePoll[*sql.Tx], testWakeUpsDoNotWaitForThePoll[pgx.Tx])
}

func testWakeUpsDoNotWaitForThePoll[TTx any](t *testing.T, k *kit[TTx]) {
	attempts := make(chan int, 10)
	c := k.client(t, &sluice.Config{
		PollInterval: time.Hour, // only wake-ups can run these jobs in time
		RetryPolicy:  quickRetry{},
		Workers: workers(func(_ context.Context, job *sluice.Job[noteArgs]) error {
			attempts <- job.Attempt
			if job.Args.N == 1 && job.Attempt == 1 {
				return errors.New("retry me")
			}
			return nil
		}),
	})
	// One at a time, so that no wake-up serves another's job.
	now, err := c.Enqueue(t.Context(), noteArgs{N: 0}, nil)
	require.NoError(t, err)
	waitFor(t, c, now.Job.ID, sluice.StatusCompleted)
	retried, err := c.Enqueue(t.Context(), noteArgs{N: 1}, nil)
	require.NoError(t, err)
	waitFor(t, c, retried.Job.ID, sluice.StatusCompleted)
	delayed, err := c.Enqueue(t.Context(), noteArgs{N: 2}, &sluice.EnqueueOptions{RunAt: time.Now().Add(50 * time.Millisecond)})
	require.NoError(t, err)
	waitFor(t, c, delayed.Job.ID, sluice.StatusCompleted)

	tx := k.tx(t)
	inTx, err := c.EnqueueTx(t.Context(), tx, noteArgs{N: 3}, nil)
	require.NoError(t, err)
	time.Sleep(3 * time.Millisecond) // the commit comes a little after the enqueue
	k.end(t, tx, true)
	waitFor(t, c, inTx.Job.ID, sluice.StatusCompleted)
}

func TestClientFromContext(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testClientFromContext[*sql.Tx], testClientFromContext[pgx.Tx])
}

func testClientFromContext[TTx any](t *testing.T, k *kit[TTx]) {
	got := make(chan *sluice.Client[TTx], 1)
	c := k.client(t, &sluice.Config{Workers: workers(func(ctx context.Context, _ *sluice.Job[noteArgs]) error {
		got <- sluice.ClientFromContext[TTx](ctx)
		return nil
	})})
	_, err := c.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	require.Same(t, c, <-got)
	require.Nil(t, sluice.ClientFromContext[TTx](t.Context()))
}
