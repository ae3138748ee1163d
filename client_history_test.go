package sluice_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

func TestFailedJobExplainsItself(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testFailedJobExplainsItself[*sql.Tx], testFailedJobExplainsItself[pgx.Tx])
}

func testFailedJobExplainsItself[TTx any](t *testing.T, k *kit[TTx]) {
	holders := make(chan string, 2)
	c := k.client(t, &sluice.Config{
		RetryPolicy: quickRetry{},
		Workers: workers(func(ctx context.Context, job *sluice.Job[noteArgs]) error {
			holders <- job.LockedBy
			if job.Attempt == 1 {
				panic("first attempt panics")
			}
			return context.DeadlineExceeded
		}),
	})
	res, err := c.Enqueue(t.Context(), noteArgs{}, &sluice.EnqueueOptions{MaxRetries: 1})
	require.NoError(t, err)
	row := waitFor(t, c, res.Job.ID, sluice.StatusFailed)
	holder := <-holders
	require.Equal(t, holder, <-holders, "one client ran both attempts")

	require.Len(t, row.Errors, 2)
	first, last := row.Errors[0], row.Errors[1]
	require.Equal(t, 1, first.Attempt)
	require.Contains(t, first.Error, "first attempt panics")
	require.Contains(t, first.Trace, "client_history_test.go", "a panic keeps its stack")
	require.Equal(t, 2, last.Attempt)
	require.Equal(t, context.DeadlineExceeded.Error(), last.Error)
	require.Empty(t, last.Trace)
	for _, e := range row.Errors {
		require.Equal(t, holder, e.ClientID, "attempt %d", e.Attempt)
		require.False(t, e.StartedAt.IsZero(), "attempt %d", e.Attempt)
		require.False(t, e.At.Before(e.StartedAt), "attempt %d ended before it started", e.Attempt)
	}
	require.True(t, last.StartedAt.Equal(row.AttemptedAt), "the last attempt started when the job was last claimed")
	require.False(t, last.StartedAt.Before(first.At), "attempts do not overlap")
}

func TestCompletedJobKeepsItsLastAttempt(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testCompletedJobKeepsItsLastAttempt[*sql.Tx], testCompletedJobKeepsItsLastAttempt[pgx.Tx])
}

func testCompletedJobKeepsItsLastAttempt[TTx any](t *testing.T, k *kit[TTx]) {
	holders := make(chan string, 1)
	c := k.client(t, &sluice.Config{
		Workers: workers(func(ctx context.Context, job *sluice.Job[noteArgs]) error {
			holders <- job.LockedBy
			return nil
		}),
	})
	res, err := c.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	row := waitFor(t, c, res.Job.ID, sluice.StatusCompleted)
	require.Equal(t, <-holders, row.AttemptedBy, "the client that ran the last attempt")
	require.Empty(t, row.LockedBy)
	require.False(t, row.AttemptedAt.IsZero())
	require.False(t, row.FinalizedAt.Before(row.AttemptedAt))
}

func TestHistoryListsEveryAttempt(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testHistoryListsEveryAttempt[*sql.Tx], testHistoryListsEveryAttempt[pgx.Tx])
}

func testHistoryListsEveryAttempt[TTx any](t *testing.T, k *kit[TTx]) {
	running, release := make(chan struct{}), make(chan struct{})
	c := k.client(t, &sluice.Config{
		RetryPolicy: quickRetry{},
		Workers: workers(func(ctx context.Context, job *sluice.Job[noteArgs]) error {
			switch job.Attempt {
			case 1:
				return errors.New("smtp is down")
			case 2:
				return sluice.Snooze(0) // a snooze is not recorded
			}
			close(running)
			<-release
			return nil
		}),
	})
	res, err := c.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	<-running
	row, err := c.Get(t.Context(), res.Job.ID)
	require.NoError(t, err)
	history := row.History()
	require.Len(t, history, 2)
	failed, current := history[0], history[1]
	require.Equal(t, 1, failed.Attempt)
	require.Equal(t, "smtp is down", failed.Error)
	require.Equal(t, row.AttemptedBy, failed.ClientID)
	require.False(t, failed.EndedAt.Before(failed.StartedAt))
	require.Equal(t, sluice.AttemptRecord{Attempt: 3, StartedAt: row.AttemptedAt, ClientID: row.LockedBy}, current,
		"the running attempt, not ended yet")

	close(release)
	row = waitFor(t, c, res.Job.ID, sluice.StatusCompleted)
	current.EndedAt = row.FinalizedAt
	require.Equal(t, []sluice.AttemptRecord{failed, current}, row.History())
}
