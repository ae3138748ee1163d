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
		"Retention.Completed":                {Completed: -time.Hour},
		"Retention.Failed":                   {Failed: -3},
		"Retention.Interval":                 {Interval: time.Microsecond},
		`Retention.Topics["mail"].Cancelled`: {Topics: map[string]sluice.Keep{"mail": {Cancelled: -time.Second}}},
		`Retention.Topics[""]`:               {Topics: map[string]sluice.Keep{"": {}}},
		`Retention.Topics["a\x00"]`:          {Topics: map[string]sluice.Keep{"a\x00": {}}},
		`Retention.Queues["bulk"].Completed`: {Queues: map[string]sluice.Keep{"bulk": {Completed: -3}}},
		`Retention.Queues["no queue"]`:       {Queues: map[string]sluice.Keep{"no queue": {}}},
	} {
		_, err := sluice.NewClient(k.driver, &sluice.Config{Retention: r})
		require.ErrorIs(t, err, sluice.ErrInvalidConfig, field)
		var ce *sluice.ConfigError
		require.True(t, errors.As(err, &ce))
		require.Equal(t, field, ce.Field)
	}
}

func TestRetentionPerTopicAndQueue(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testRetentionPerTopicAndQueue[*sql.Tx], testRetentionPerTopicAndQueue[pgx.Tx])
}

// testRetentionPerTopicAndQueue keeps completed jobs 2 hours by default,
// 10 minutes in queue bulk, for good for topic audit even in bulk, and
// not at all for topic ping, whose worker acks in its own transaction;
// failed jobs of bulk are not kept either.
func testRetentionPerTopicAndQueue[TTx any](t *testing.T, k *kit[TTx]) {
	clock := &fakeClock{}
	ws := workers(func(ctx context.Context, job *sluice.Job[noteArgs]) error {
		if job.Args.N < 0 {
			return errors.New("fail")
		}
		return nil
	})
	sluice.AddRawWorker(ws, "audit", sluice.WorkFunc(func(context.Context, *sluice.Job[sluice.RawArgs]) error { return nil }))
	sluice.AddRawWorker(ws, "ping", sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[sluice.RawArgs]) error {
		tx, err := k.begin(ctx)
		if err != nil {
			return err
		}
		if err := sluice.ClientFromContext[TTx](ctx).Ack(ctx, tx, job); err != nil {
			_ = k.rollback(ctx, tx)
			return err
		}
		return k.commit(ctx, tx)
	}))
	c := k.client(t, &sluice.Config{
		Clock:   clock.Now,
		Workers: ws,
		Queues:  map[string]sluice.QueueConfig{"default": {MaxWorkers: 2}, "bulk": {MaxWorkers: 2}},
		Retention: sluice.Retention{
			Interval:  5 * time.Millisecond,
			Completed: 2 * time.Hour,
			Topics:    map[string]sluice.Keep{"audit": {Completed: sluice.KeepForever}, "ping": {Completed: sluice.KeepNone}},
			Queues:    map[string]sluice.Keep{"bulk": {Completed: 10 * time.Minute, Failed: sluice.KeepNone}},
		},
	})
	sub := c.Subscribe(sluice.EventCompleted, sluice.EventFailed)
	defer sub.Close()
	enqueue := func(args sluice.JobArgs, queue string) string {
		t.Helper()
		res, err := c.Enqueue(t.Context(), args, &sluice.EnqueueOptions{Queue: queue, MaxRetries: sluice.NoRetries})
		require.NoError(t, err)
		return res.Job.ID
	}
	raw := func(topic string) sluice.RawArgs { return sluice.RawArgs{TopicName: topic, Payload: []byte(`{}`)} }
	plain, bulk := enqueue(noteArgs{N: 1}, "default"), enqueue(noteArgs{N: 2}, "bulk")
	audit := enqueue(raw("audit"), "bulk")
	ping, bulkFailed := enqueue(raw("ping"), "default"), enqueue(noteArgs{N: -1}, "bulk")

	// The client's events come once the outcome is written: the jobs kept
	// for none are gone then, deleted in the outcome's transaction (the
	// worker's own for ping).
	kept := map[string]bool{plain: true, bulk: true, audit: true, bulkFailed: false}
	for seen := map[string]bool{}; len(seen) < len(kept); {
		if ev := <-sub.C; kept[ev.Job.ID] || ev.Job.ID == bulkFailed {
			seen[ev.Job.ID] = true
		}
	}
	for id, kept := range kept {
		_, err := c.Get(t.Context(), id)
		require.Equal(t, !kept, errors.Is(err, sluice.ErrNotFound), "job %s kept: %v", id, kept)
	}
	require.Eventually(t, func() bool {
		_, err := c.Get(t.Context(), ping)
		return errors.Is(err, sluice.ErrNotFound)
	}, 5*time.Second, 5*time.Millisecond, "acked in the worker's transaction, deleted in it")

	gone := func(id string) func() bool {
		return func() bool {
			_, err := c.Get(t.Context(), id)
			return errors.Is(err, sluice.ErrNotFound)
		}
	}
	clock.Advance(11 * time.Minute)
	require.Eventually(t, gone(bulk), 5*time.Second, 5*time.Millisecond, "bulk keeps completed jobs 10 minutes")
	never(t, gone(plain), 50*time.Millisecond, 5*time.Millisecond, "default keeps them 2 hours")
	clock.Advance(2 * time.Hour)
	require.Eventually(t, gone(plain), 5*time.Second, 5*time.Millisecond, "2 hours passed")
	clock.Advance(365 * 24 * time.Hour)
	never(t, gone(audit), 50*time.Millisecond, 5*time.Millisecond, "audit is kept for good, in bulk too")
	st, err := c.Stats(t.Context(), nil)
	require.NoError(t, err)
	require.Equal(t, map[sluice.JobStatus]int{sluice.StatusCompleted: 1}, st.ByStatus, "the kept counts agree")
}
