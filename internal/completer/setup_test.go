package completer_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/completer"
	"github.com/sluicehq/sluice/internal/testkit/exectest"
)

// The completer is driven through a real database; recorder stands between
// them only to see the calls the completer makes (how it batches, when it
// retries) and to hold one under way. What each call does is the
// database's doing.

// call is one JobFinalize call: the jobs it named, when it started, and
// when it returned (zero while under way).
type call struct {
	ids     []string
	at, end time.Time
}

// recorder passes every operation to a real executor and records the
// JobFinalize calls.
type recorder struct {
	driver.Executor

	mu    sync.Mutex
	calls []call
	hold  *hold
}

// hold keeps one call waiting: entered closes when the call starts, and the
// call goes on once release closes.
type hold struct{ entered, release chan struct{} }

// JobFinalize records the call, waits if it is held, and passes it on.
func (r *recorder) JobFinalize(ctx context.Context, p *driver.JobFinalizeParams) ([]bool, error) {
	c := call{at: time.Now()}
	for _, j := range p.Jobs {
		c.ids = append(c.ids, j.ID)
	}
	r.mu.Lock()
	i := len(r.calls)
	r.calls = append(r.calls, c)
	h := r.hold
	r.hold = nil
	r.mu.Unlock()
	if h != nil {
		close(h.entered)
		<-h.release
	}
	matched, err := r.Executor.JobFinalize(ctx, p)
	r.mu.Lock()
	r.calls[i].end = time.Now()
	r.mu.Unlock()
	return matched, err
}

// holdWrite queues the outcome that completes row and returns once its
// write is under way, held there until release is called: outcomes queued
// meanwhile wait for the next batch.
func (b *bench) holdWrite(t *testing.T, row *driver.JobRow) (release func()) {
	t.Helper()
	h := &hold{entered: make(chan struct{}), release: make(chan struct{})}
	b.rec.mu.Lock()
	b.rec.hold = h
	b.rec.mu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(h.release) }) }
	t.Cleanup(release)
	b.add(complete(row))
	<-h.entered
	return release
}

// callsOf returns the calls that named id.
func (r *recorder) callsOf(id string) []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	var cs []call
	for _, c := range r.calls {
		for _, got := range c.ids {
			if got == id {
				cs = append(cs, c)
			}
		}
	}
	return cs
}

// sizes returns the number of jobs each call named, in order.
func (r *recorder) sizes() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := make([]int, len(r.calls))
	for i, c := range r.calls {
		s[i] = len(c.ids)
	}
	return s
}

// outcome is what Done was told.
type outcome struct {
	matched bool
	err     error
	at      time.Time
}

// bench is one test's database, completer and what its Done callbacks told.
type bench struct {
	db   *exectest.DB
	rec  *recorder
	c    *completer.Completer
	logs *exectest.Logs

	mu   sync.Mutex
	done map[string]outcome
	dups []string // jobs told twice
}

// newBench returns a completer over db with a queue of capacity and a
// retry window.
func newBench(t *testing.T, db *exectest.DB, capacity int, window time.Duration) *bench {
	t.Helper()
	logger, logs := exectest.Logger()
	b := &bench{db: db, rec: &recorder{Executor: db.Exec}, logs: logs, done: map[string]outcome{}}
	b.c = completer.New(b.rec, logger, capacity, window)
	t.Cleanup(func() {
		b.stop(t, 10*time.Second)
		b.mu.Lock()
		defer b.mu.Unlock()
		require.Empty(t, b.dups, "Done is called once per item")
	})
	return b
}

// stop stops the completer, once, allowing it d.
func (b *bench) stop(t *testing.T, d time.Duration) {
	t.Helper()
	b.mu.Lock()
	c := b.c
	b.c = nil
	b.mu.Unlock()
	if c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		c.Stop(ctx)
	}()
	select {
	case <-stopped:
	case <-time.After(d + 5*time.Second):
		t.Error("Stop did not return after its context ended")
	}
}

// claim returns n jobs claimed by client "c".
func (b *bench) claim(n int) []*driver.JobRow {
	now := exectest.Now()
	return b.db.Claim(n, "c", now, now.Add(time.Hour), 3)
}

// complete returns the outcome that completes row's claim.
func complete(row *driver.JobRow) *driver.JobFinalize {
	return &driver.JobFinalize{
		ID: row.ID, Attempt: row.Attempt, LockedBy: row.LockedBy, AttemptedAt: row.AttemptedAt,
		Status: driver.StatusCompleted, FinalizedAt: exectest.Now(),
	}
}

// add queues fin, with a Done that records what it is told.
func (b *bench) add(fin *driver.JobFinalize) {
	b.mu.Lock()
	c := b.c
	b.mu.Unlock()
	c.Add(completer.Item{Finalize: fin, Done: func(matched bool, err error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.done[fin.ID]; ok {
			b.dups = append(b.dups, fin.ID)
		}
		b.done[fin.ID] = outcome{matched: matched, err: err, at: time.Now()}
	}})
}

// addAll queues the outcome that completes each of rows.
func (b *bench) addAll(rows []*driver.JobRow) {
	for _, row := range rows {
		b.add(complete(row))
	}
}

// told returns what Done was told about id, if it was called.
func (b *bench) told(id string) (outcome, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.done[id]
	return o, ok
}

// wait waits until Done was called for id, and returns what it was told.
func (b *bench) wait(t *testing.T, id string) outcome {
	t.Helper()
	require.Eventually(t, func() bool {
		_, ok := b.told(id)
		return ok
	}, 20*time.Second, time.Millisecond, "Done for %s", id)
	o, _ := b.told(id)
	return o
}

// requireCompleted waits until Done says each of rows matched, and checks
// that each is stored completed.
func (b *bench) requireCompleted(t *testing.T, rows ...*driver.JobRow) {
	t.Helper()
	for _, row := range rows {
		o := b.wait(t, row.ID)
		require.NoError(t, o.err)
		require.True(t, o.matched, "job %s matched", row.ID)
		require.Equal(t, driver.StatusCompleted, b.db.Get(row.ID).Status)
	}
}

// requireGivenUp waits until Done says the outcome of row was given up,
// and checks that the job is left processing for the rescuer.
func (b *bench) requireGivenUp(t *testing.T, row *driver.JobRow) outcome {
	t.Helper()
	o := b.wait(t, row.ID)
	require.False(t, o.matched)
	require.Error(t, o.err)
	stored := b.db.Get(row.ID)
	require.Equal(t, driver.StatusProcessing, stored.Status)
	require.Equal(t, row.LockedBy, stored.LockedBy)
	return o
}
