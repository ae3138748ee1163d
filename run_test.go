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

func TestStopWaitsForRunningJobs(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testStopWaitsForRunningJobs[*sql.Tx], testStopWaitsForRunningJobs[pgx.Tx])
}

func testStopWaitsForRunningJobs[TTx any](t *testing.T, k *kit[TTx]) {
	started, release := make(chan struct{}), make(chan struct{})
	c, err := sluice.NewClient(k.driver, &sluice.Config{Workers: workers(func(context.Context, *sluice.Job[noteArgs]) error {
		close(started)
		<-release
		return nil
	})})
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	require.ErrorIs(t, c.Start(t.Context()), sluice.ErrAlreadyStarted)
	res, err := c.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	<-started
	stopped := make(chan error, 1)
	go func() { stopped <- c.Stop(context.Background()) }()
	time.Sleep(50 * time.Millisecond)
	require.Empty(t, stopped, "Stop returned while a job was running")
	close(release)
	require.NoError(t, <-stopped)
	row, err := c.Get(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, sluice.StatusCompleted, row.Status, "finished jobs are recorded before Stop returns")
	require.NoError(t, c.Stop(t.Context()), "Stop is idempotent")
}

func TestStopDeadlineHandsJobsBackAtOnce(t *testing.T) {
	t.Parallel()
	for name, cancelFirst := range map[string]bool{"Stop": false, "StopAndCancel": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			onBothDrivers(t, testStopDeadlineHandsJobsBackAtOnce[*sql.Tx](cancelFirst),
				testStopDeadlineHandsJobsBackAtOnce[pgx.Tx](cancelFirst))
		})
	}
}

func testStopDeadlineHandsJobsBackAtOnce[TTx any](cancelFirst bool) func(*testing.T, *kit[TTx]) {
	return func(t *testing.T, k *kit[TTx]) {
		started := make(chan struct{}, 3)
		c, err := sluice.NewClient(k.driver, &sluice.Config{Workers: workers(func(ctx context.Context, _ *sluice.Job[noteArgs]) error {
			started <- struct{}{}
			<-ctx.Done()
			return ctx.Err()
		})})
		require.NoError(t, err)
		require.NoError(t, c.Start(t.Context()))
		var ids []string
		for range 3 {
			res, err := c.Enqueue(t.Context(), noteArgs{}, nil)
			require.NoError(t, err)
			ids = append(ids, res.Job.ID)
		}
		for range 3 {
			<-started
		}
		if cancelFirst {
			// The jobs never end by themselves, so StopAndCancel returns
			// before its deadline only by cancelling them; the deadline
			// leaves room for a busy machine under -race.
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			require.NoError(t, c.StopAndCancel(ctx))
			cancel()
		} else {
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			require.ErrorIs(t, c.Stop(ctx), context.DeadlineExceeded)
			cancel()
		}
		for _, id := range ids {
			row, err := c.Get(t.Context(), id)
			require.NoError(t, err)
			require.Equal(t, sluice.StatusPending, row.Status)
			require.Equal(t, 1, row.Attempt)
			require.Equal(t, sluice.DefaultMaxRetries+1, row.MaxRetries, "an interrupted run spends no retry")
			require.Empty(t, row.Errors)
			require.Empty(t, row.LockedBy)
			require.False(t, row.RunAt.After(time.Now()), "handed back to run at once")
		}
	}
}

func TestStopWithoutStart(t *testing.T) {
	t.Parallel()
	k := sqliteKit(t)
	c, err := sluice.NewClient(k.driver, &sluice.Config{Workers: workers(func(context.Context, *sluice.Job[noteArgs]) error {
		return nil
	})})
	require.NoError(t, err)
	require.NoError(t, c.Stop(t.Context()))
	require.NoError(t, c.StopAndCancel(t.Context()))
}

func TestRestartAfterStop(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testRestartAfterStop[*sql.Tx], testRestartAfterStop[pgx.Tx])
}

func testRestartAfterStop[TTx any](t *testing.T, k *kit[TTx]) {
	done := make(chan int, 2)
	c := k.client(t, &sluice.Config{Workers: workers(func(_ context.Context, job *sluice.Job[noteArgs]) error {
		done <- job.Args.N
		return nil
	})})
	_, err := c.Enqueue(t.Context(), noteArgs{N: 1}, nil)
	require.NoError(t, err)
	require.Equal(t, 1, <-done)
	require.NoError(t, c.Stop(t.Context()))
	require.NoError(t, c.Start(t.Context()))
	_, err = c.Enqueue(t.Context(), noteArgs{N: 2}, nil)
	require.NoError(t, err)
	require.Equal(t, 2, <-done)
}

func TestExpiredLeaseIsRescuedAndRunAgain(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testExpiredLeaseIsRescuedAndRunAgain[*sql.Tx], testExpiredLeaseIsRescuedAndRunAgain[pgx.Tx])
}

func testExpiredLeaseIsRescuedAndRunAgain[TTx any](t *testing.T, k *kit[TTx]) {
	inserter := k.client(t, nil)
	res, err := inserter.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	// A client claims the job and dies: its lease runs out a second ago.
	now := time.Now()
	claimed, err := k.exec.JobClaim(t.Context(), &driver.JobClaimParams{
		ClientID: "crashed", Queue: sluice.QueueDefault, Topics: []string{"note"}, Limit: 1,
		Now: now, LockedUntil: now.Add(-time.Second),
	})
	require.NoError(t, err)
	require.Len(t, claimed, 1)

	c := k.client(t, &sluice.Config{Workers: workers(func(context.Context, *sluice.Job[noteArgs]) error { return nil })})
	row := waitFor(t, c, res.Job.ID, sluice.StatusCompleted)
	require.Equal(t, 2, row.Attempt)
	require.Len(t, row.Errors, 1)
	require.Equal(t, "lease expired", row.Errors[0].Error)
	require.Equal(t, 1, row.Errors[0].Attempt)
}

func TestHeartbeatKeepsALiveJobFromBeingTakenOver(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testHeartbeatKeepsALiveJobFromBeingTakenOver[*sql.Tx], testHeartbeatKeepsALiveJobFromBeingTakenOver[pgx.Tx])
}

func testHeartbeatKeepsALiveJobFromBeingTakenOver[TTx any](t *testing.T, k *kit[TTx]) {
	runs := make(chan int, 10)
	cfg := func() *sluice.Config {
		return &sluice.Config{
			// Under -race on a busy machine one claim or heartbeat can
			// take 300 ms, so a lease leaves that much room.
			LeaseDuration: 500 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond,
			RescueInterval: 20 * time.Millisecond,
			Workers: workers(func(_ context.Context, job *sluice.Job[noteArgs]) error {
				runs <- job.Attempt
				time.Sleep(1500 * time.Millisecond) // three leases long
				return nil
			}),
		}
	}
	holder := k.client(t, cfg())
	res, err := holder.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	require.Equal(t, 1, <-runs)
	k.client(t, cfg()) // a second client, rescuing every 20 ms
	row := waitFor(t, holder, res.Job.ID, sluice.StatusCompleted)
	require.Equal(t, 1, row.Attempt)
	require.Empty(t, row.Errors)
	require.Empty(t, runs, "the job ran once")
}

func TestExpiredJobWithoutRetriesFails(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testExpiredJobWithoutRetriesFails[*sql.Tx], testExpiredJobWithoutRetriesFails[pgx.Tx])
}

func testExpiredJobWithoutRetriesFails[TTx any](t *testing.T, k *kit[TTx]) {
	inserter := k.client(t, nil)
	res, err := inserter.Enqueue(t.Context(), noteArgs{}, &sluice.EnqueueOptions{MaxRetries: sluice.NoRetries})
	require.NoError(t, err)
	now := time.Now()
	_, err = k.exec.JobClaim(t.Context(), &driver.JobClaimParams{
		ClientID: "crashed", Queue: sluice.QueueDefault, Topics: []string{"note"}, Limit: 1,
		Now: now, LockedUntil: now.Add(-time.Second),
	})
	require.NoError(t, err)
	c := k.client(t, &sluice.Config{Workers: workers(func(context.Context, *sluice.Job[noteArgs]) error {
		return errors.New("must not run")
	})})
	row := waitFor(t, c, res.Job.ID, sluice.StatusFailed)
	require.Equal(t, 1, row.Attempt)
	require.Equal(t, "lease expired", row.Errors[0].Error)
}

func TestStopKeepsADeliberateCancel(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testStopKeepsADeliberateCancel[*sql.Tx], testStopKeepsADeliberateCancel[pgx.Tx])
}

func testStopKeepsADeliberateCancel[TTx any](t *testing.T, k *kit[TTx]) {
	started := make(chan struct{})
	c, err := sluice.NewClient(k.driver, &sluice.Config{Workers: workers(func(ctx context.Context, _ *sluice.Job[noteArgs]) error {
		close(started)
		<-ctx.Done()
		return sluice.Cancel(errors.New("shutting down: do not retry"))
	})})
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	res, err := c.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	<-started
	require.NoError(t, c.StopAndCancel(t.Context()))
	row, err := c.Get(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, sluice.StatusCancelled, row.Status)
}

// TestHeartbeatLeavesJobsTheClientDoesNotHold checks that a running client
// extends the leases of the jobs it holds only: a job the database says it
// holds but whose outcome the client already wrote (a completion a crashed
// server forgot, simulated here) expires and is run again, instead of being
// kept alive for as long as the client runs.
func TestHeartbeatLeavesJobsTheClientDoesNotHold(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testHeartbeatLeavesJobsTheClientDoesNotHold[*sql.Tx], testHeartbeatLeavesJobsTheClientDoesNotHold[pgx.Tx])
}

func testHeartbeatLeavesJobsTheClientDoesNotHold[TTx any](t *testing.T, k *kit[TTx]) {
	runs := make(chan int, 10)
	release := make(chan struct{})
	c := k.client(t, &sluice.Config{
		LeaseDuration: 300 * time.Millisecond, HeartbeatInterval: 50 * time.Millisecond,
		RescueInterval: 50 * time.Millisecond,
		Workers: workers(func(ctx context.Context, job *sluice.Job[noteArgs]) error {
			if job.Args.N == 1 { // a long job, so that the client keeps beating
				select {
				case <-release:
				case <-ctx.Done():
				}
				return nil
			}
			runs <- job.Attempt
			return nil
		}),
	})
	defer close(release)
	_, err := c.Enqueue(t.Context(), noteArgs{N: 1}, nil)
	require.NoError(t, err)
	res, err := c.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	require.Equal(t, 1, <-runs)
	done := waitFor(t, c, res.Job.ID, sluice.StatusCompleted)
	// The completion is forgotten: the job is processing under the
	// client's claim again, with a lease of a few heartbeats.
	k.run(t, `UPDATE sluice_jobs SET status = 'processing', finalized_at = NULL,
		locked_by = ?, locked_until = ? WHERE id = ?`, done.AttemptedBy, time.Now().Add(300*time.Millisecond), done.ID)
	select {
	case attempt := <-runs:
		require.Equal(t, 2, attempt)
	case <-time.After(10 * time.Second):
		t.Fatal("the client's heartbeat kept a job it does not hold alive")
	}
	row := waitFor(t, c, res.Job.ID, sluice.StatusCompleted)
	require.Equal(t, "lease expired", row.Errors[0].Error)
}
