package fetcher_test

import (
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/fetcher"
	"github.com/sluicehq/sluice/internal/testkit/exectest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// loop is a running fetcher and the jobs it started.
type loop struct {
	f *fetcher.Fetcher

	mu       sync.Mutex
	started  []*driver.JobRow
	overfull bool // a job started while every slot was taken
}

// run runs a fetcher of maxWorkers slots over db, polling every poll, until
// the test ends.
func run(t *testing.T, db *exectest.DB, maxWorkers int, poll time.Duration) *loop {
	t.Helper()
	l := &loop{}
	l.f = fetcher.New(fetcher.Config{
		Exec:          db.Exec,
		ClientID:      "c",
		Queue:         exectest.Queue,
		Topics:        []string{exectest.Topic},
		MaxWorkers:    maxWorkers,
		PollInterval:  poll,
		LeaseDuration: time.Minute,
		Clock:         time.Now,
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		Start: func(row *driver.JobRow) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.started = append(l.started, row)
			l.overfull = l.overfull || l.f.Running() > maxWorkers
		},
	})
	exectest.Background(t, l.f.Run)
	return l
}

// count returns how many jobs the fetcher started.
func (l *loop) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.started)
}

// waitStarted waits until the fetcher has started n jobs.
func (l *loop) waitStarted(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return l.count() >= n }, 10*time.Second, time.Millisecond)
	require.Equal(t, n, l.count())
}

func TestRunClaimsForTheFreeSlotsOnly(t *testing.T) {
	t.Parallel()
	exectest.Each(t, func(t *testing.T, db *exectest.DB) {
		db.Insert(5, exectest.Now(), 3)
		l := run(t, db, 2, time.Hour)
		l.waitStarted(t, 2)
		require.Equal(t, 2, l.f.Running())

		l.f.Done()
		l.waitStarted(t, 3)
		l.f.Done()
		l.f.Done()
		l.waitStarted(t, 5)
		l.f.Done()
		l.f.Done()
		require.Zero(t, l.f.Running())
		l.mu.Lock()
		defer l.mu.Unlock()
		require.False(t, l.overfull)
		for _, row := range l.started {
			require.Equal(t, driver.StatusProcessing, row.Status)
			require.Equal(t, "c", row.LockedBy)
		}
	})
}

func TestRunClaimsAtOnceWhenWoken(t *testing.T) {
	t.Parallel()
	exectest.Each(t, func(t *testing.T, db *exectest.DB) {
		l := run(t, db, 2, time.Hour)
		db.Insert(1, exectest.Now(), 3)
		l.f.Wake(true)
		l.waitStarted(t, 1)
	})
}

func TestRunRepollsAfterAnUncommittedWakeUp(t *testing.T) {
	t.Parallel()
	exectest.Each(t, func(t *testing.T, db *exectest.DB) {
		l := run(t, db, 2, time.Hour)
		l.f.Wake(false) // the job's transaction commits a moment later
		time.Sleep(20 * time.Millisecond)
		db.Insert(1, exectest.Now(), 3)
		l.waitStarted(t, 1)
	})
}

func TestRunClaimsADelayedJobAtTheTimeAsked(t *testing.T) {
	t.Parallel()
	exectest.Each(t, func(t *testing.T, db *exectest.DB) {
		l := run(t, db, 2, time.Hour)
		runAt := exectest.Now().Add(50 * time.Millisecond)
		db.Insert(1, runAt, 3)
		l.f.WakeAt(runAt.Add(time.Hour)) // later than the poll: no effect
		l.f.WakeAt(runAt)
		l.waitStarted(t, 1)
		require.False(t, time.Now().Before(runAt), "not claimed before it was due")
	})
}
