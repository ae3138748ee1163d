package sqlitedriver_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

// recorder collects notifications.
type recorder struct {
	mu  sync.Mutex
	got []driver.Notification
}

func (r *recorder) add(n driver.Notification) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, n)
}

func (r *recorder) take() []driver.Notification {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.got
	r.got = nil
	return got
}

func TestNotifier(t *testing.T) {
	t.Parallel()
	d, db := newDriver(t, 0)
	ctx := t.Context()
	var rec recorder
	var n driver.Notifier = d
	stop, err := n.Listen(ctx, rec.add)
	require.NoError(t, err)

	// Once per queue per insert, committed through the handle.
	insert(t, d.Executor(), newJob(), newJob(), newJob(func(j *driver.JobInsert) { j.Queue = "other" }))
	require.ElementsMatch(t, []driver.Notification{
		{Queue: "default", Committed: true},
		{Queue: "other", Committed: true},
	}, rec.take())

	// Not committed inside a transaction.
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	insert(t, d.UnwrapExecutor(tx), newJob(func(j *driver.JobInsert) { j.UniqueKey = "u" }))
	require.NoError(t, tx.Commit())
	require.Equal(t, []driver.Notification{{Queue: "default"}}, rec.take())

	// A duplicate inserts nothing and notifies nobody.
	res := insert(t, d.Executor(), newJob(func(j *driver.JobInsert) { j.UniqueKey = "u" }))
	require.True(t, res[0].Duplicate)
	require.Empty(t, rec.take())

	// A failed insert notifies nobody.
	dup := newJob()
	insert(t, d.Executor(), dup)
	rec.take()
	_, err = d.Executor().JobInsertMany(ctx, &driver.JobInsertManyParams{Jobs: []*driver.JobInsert{dup}})
	require.Error(t, err)
	require.Empty(t, rec.take())

	stop()
	stop() // idempotent
	insert(t, d.Executor(), newJob())
	require.Empty(t, rec.take())
}

func TestNotifierStopsWithContext(t *testing.T) {
	t.Parallel()
	d, _ := newDriver(t, 0)
	var first, second recorder
	ctx, cancel := context.WithCancel(t.Context())
	stop1, err := d.Listen(ctx, first.add)
	require.NoError(t, err)
	defer stop1()
	stop2, err := d.Listen(t.Context(), second.add)
	require.NoError(t, err)
	defer stop2()

	cancel()
	insert(t, d.Executor(), newJob())
	require.Empty(t, first.take())
	require.Len(t, second.take(), 1)

	_, err = d.Listen(ctx, first.add)
	require.ErrorIs(t, err, context.Canceled)
}

// TestNotifierCallbackMayStop checks that a listener may stop itself, read
// and insert from its callback without deadlocking, on a single connection.
func TestNotifierCallbackMayStop(t *testing.T) {
	t.Parallel()
	d, _ := newDriver(t, 1)
	var stop func()
	calls := 0
	stop, err := d.Listen(t.Context(), func(driver.Notification) {
		calls++
		stop()
		_, err := d.Executor().JobGet(context.Background(), &driver.JobGetParams{ID: "x"})
		require.ErrorIs(t, err, driver.ErrNotFound)
		insert(t, d.Executor(), newJob())
	})
	require.NoError(t, err)
	insert(t, d.Executor(), newJob())
	insert(t, d.Executor(), newJob())
	require.Equal(t, 1, calls)
}
