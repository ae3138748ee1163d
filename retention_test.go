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

func TestRetentionDeletesExpiredJobsByStatus(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testRetentionDeletesExpiredJobsByStatus[*sql.Tx], testRetentionDeletesExpiredJobsByStatus[pgx.Tx])
}

func testRetentionDeletesExpiredJobsByStatus[TTx any](t *testing.T, k *kit[TTx]) {
	clock := &fakeClock{}
	cfg := func(r sluice.Retention) *sluice.Config {
		return &sluice.Config{
			Clock:     clock.Now,
			Retention: r,
			Workers: workers(func(ctx context.Context, job *sluice.Job[noteArgs]) error {
				if job.Args.N < 0 {
					return errors.New("fail")
				}
				return nil
			}),
		}
	}
	// Two cleaners at once, as two processes would run; one keeps
	// cancelled jobs for good, which the other does not.
	c := k.client(t, cfg(sluice.Retention{Interval: 5 * time.Millisecond}))
	k.client(t, cfg(sluice.Retention{Interval: 5 * time.Millisecond, Cancelled: sluice.KeepForever}))

	ok, err := c.Enqueue(t.Context(), noteArgs{N: 1}, nil)
	require.NoError(t, err)
	failed, err := c.Enqueue(t.Context(), noteArgs{N: -1}, &sluice.EnqueueOptions{MaxRetries: sluice.NoRetries})
	require.NoError(t, err)
	cancelled, err := c.Enqueue(t.Context(), noteArgs{}, &sluice.EnqueueOptions{RunAt: clock.Now().Add(time.Hour)})
	require.NoError(t, err)
	_, err = c.Cancel(t.Context(), cancelled.Job.ID)
	require.NoError(t, err)
	waitFor(t, c, ok.Job.ID, sluice.StatusCompleted)
	waitFor(t, c, failed.Job.ID, sluice.StatusFailed)

	gone := func(id string) func() bool {
		return func() bool {
			_, err := c.Get(t.Context(), id)
			return errors.Is(err, sluice.ErrNotFound)
		}
	}
	clock.Advance(23 * time.Hour)
	never(t, gone(ok.Job.ID), 100*time.Millisecond, 10*time.Millisecond, "completed, kept for 24 h")

	clock.Advance(2 * time.Hour)
	require.Eventually(t, gone(ok.Job.ID), 5*time.Second, 10*time.Millisecond, "completed, 25 h old")
	require.Equal(t, 2, k.count(t), "failed and cancelled jobs are kept for 7 days")

	clock.Advance(7 * 24 * time.Hour)
	require.Eventually(t, gone(failed.Job.ID), 5*time.Second, 10*time.Millisecond, "failed, 7 days old")
	require.Eventually(t, gone(cancelled.Job.ID), 5*time.Second, 10*time.Millisecond,
		"cancelled: one cleaner deletes what another keeps")
}

func TestRetentionKeepForever(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testRetentionKeepForever[*sql.Tx], testRetentionKeepForever[pgx.Tx])
}

func testRetentionKeepForever[TTx any](t *testing.T, k *kit[TTx]) {
	clock := &fakeClock{}
	c := k.client(t, &sluice.Config{
		Clock:     clock.Now,
		Retention: sluice.Retention{Completed: sluice.KeepForever, Interval: 5 * time.Millisecond},
		Workers:   workers(func(context.Context, *sluice.Job[noteArgs]) error { return nil }),
	})
	res, err := c.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	waitFor(t, c, res.Job.ID, sluice.StatusCompleted)
	clock.Advance(365 * 24 * time.Hour)
	never(t, func() bool { return k.count(t) == 0 }, 100*time.Millisecond, 10*time.Millisecond)
}

func TestRetentionRejectsBadConfig(t *testing.T) {
	t.Parallel()
	k := sqliteKit(t)
	for field, r := range map[string]sluice.Retention{
		"Retention.Completed": {Completed: -time.Hour},
		"Retention.Failed":    {Failed: -2},
		"Retention.Interval":  {Interval: time.Microsecond},
	} {
		_, err := sluice.NewClient(k.driver, &sluice.Config{Retention: r})
		require.ErrorIs(t, err, sluice.ErrInvalidConfig, field)
		var ce *sluice.ConfigError
		require.True(t, errors.As(err, &ce))
		require.Equal(t, field, ce.Field)
	}
}
