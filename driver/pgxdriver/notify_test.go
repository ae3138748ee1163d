package pgxdriver_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/pgxdriver"
)

// listener collects a driver's notifications.
type listener struct {
	ch   chan driver.Notification
	stop func()
}

func startListener(t *testing.T, d *pgxdriver.Driver) *listener {
	t.Helper()
	l := &listener{ch: make(chan driver.Notification, 1024)}
	stop, err := d.Listen(t.Context(), func(n driver.Notification) {
		select {
		case l.ch <- n:
		default:
		}
	})
	require.NoError(t, err, "Listen")
	l.stop = stop
	t.Cleanup(stop)
	return l
}

// await waits for a notification of queue and returns the queues notified
// before it. A notification is delivered once its transaction commits, in
// commit order, so every notification committed earlier is among them.
func (l *listener) await(t *testing.T, queue string) []string {
	t.Helper()
	var before []string
	timeout := time.After(30 * time.Second)
	for {
		select {
		case n := <-l.ch:
			require.True(t, n.Committed, "Committed")
			if n.Queue == queue {
				return before
			}
			before = append(before, n.Queue)
		case <-timeout:
			t.Fatalf("no notification of queue %q", queue)
		}
	}
}

// TestNotifyOnCommit checks that a transaction's inserts notify when it
// commits, not before, and never when it rolls back.
func TestNotifyOnCommit(t *testing.T) {
	t.Parallel()
	d, pool, _ := newDriver(t)
	ctx := t.Context()
	l := startListener(t, d)

	committed, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = committed.Rollback(ctx) }()
	_, err = d.UnwrapExecutor(committed).JobInsertMany(ctx, params(jobs(1, "later")))
	require.NoError(t, err)
	rolledBack, err := pool.Begin(ctx)
	require.NoError(t, err)
	_, err = d.UnwrapExecutor(rolledBack).JobInsertMany(ctx, params(jobs(150, "never")))
	require.NoError(t, err)
	require.NoError(t, rolledBack.Rollback(ctx))

	_, err = d.Executor().JobInsertMany(ctx, params(jobs(1, "marker")))
	require.NoError(t, err)
	require.Empty(t, l.await(t, "marker"), "notifications before the marker's")

	require.NoError(t, committed.Commit(ctx))
	_, err = d.Executor().JobInsertMany(ctx, params(jobs(2, "marker2")))
	require.NoError(t, err)
	require.Equal(t, []string{"later"}, l.await(t, "marker2"), "notifications before the second marker's")
}

// TestListenerSurvivesTermination kills the listener's connection from the
// server side; the listener reconnects on its own.
// TestReleaseNotifies checks that a job released from waiting wakes the
// listening clients of its queue, as an insert does, so that a task of a
// workflow starts when its dependency completes in another process.
func TestReleaseNotifies(t *testing.T) {
	t.Parallel()
	d, _, _ := newDriver(t)
	ctx := t.Context()
	ex := d.Executor()
	l := startListener(t, d)
	first := newJob("default")
	then := newJob("released")
	then.DependsOn, then.OnDependencyFailure = []string{first.ID}, driver.DependencyCancel
	_, err := ex.JobInsertMany(ctx, params([]*driver.JobInsert{first, then}))
	require.NoError(t, err)
	l.await(t, "released") // the insert's own

	rows := claim(t, d, "c", 1)
	require.Len(t, rows, 1)
	now := time.Now()
	_, err = ex.JobFinalize(ctx, &driver.JobFinalizeParams{Jobs: []*driver.JobFinalize{{ID: first.ID, Attempt: 1,
		LockedBy: "c", AttemptedAt: rows[0].AttemptedAt, Status: driver.StatusCompleted, FinalizedAt: now}}})
	require.NoError(t, err)
	released, err := ex.JobRelease(ctx, &driver.JobReleaseParams{Now: now, Limit: 10})
	require.NoError(t, err)
	require.Len(t, released, 1)
	require.Equal(t, then.ID, released[0].ID)
	l.await(t, "released")
}

func TestListenerSurvivesTermination(t *testing.T) {
	t.Parallel()
	d, pool, _ := newDriver(t)
	ctx := t.Context()
	l := startListener(t, d)
	_, err := d.Executor().JobInsertMany(ctx, params(jobs(1, "first")))
	require.NoError(t, err)
	l.await(t, "first")

	var killed int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE query = 'LISTEN ' || quote_ident($1)`, d.Channel()).Scan(&killed))
	require.Equal(t, 1, killed, "listening connections terminated")

	// Notifications sent before the listener is back are lost: insert
	// until one arrives.
	for {
		_, err := d.Executor().JobInsertMany(ctx, params(jobs(1, "again")))
		require.NoError(t, err)
		select {
		case n := <-l.ch:
			if n.Queue == "again" {
				return
			}
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
}

func TestWithoutListen(t *testing.T) {
	t.Parallel()
	d, _, _ := newDriver(t, pgxdriver.WithoutListen())
	stop, err := d.Listen(t.Context(), func(driver.Notification) {})
	require.ErrorIs(t, err, pgxdriver.ErrListenDisabled)
	require.NotNil(t, stop)
	stop()
}

func TestListenCancelledContext(t *testing.T) {
	t.Parallel()
	d, _, _ := newDriver(t)
	ctx, cancel := context.WithCancel(t.Context())
	stop, err := d.Listen(ctx, func(driver.Notification) {})
	require.NoError(t, err)
	cancel()
	stop() // returns once the listener has ended
	ctx, cancel = context.WithCancel(t.Context())
	cancel()
	_, err = d.Listen(ctx, func(driver.Notification) {})
	require.True(t, errors.Is(err, context.Canceled), "Listen with a cancelled context: %v", err)
}
