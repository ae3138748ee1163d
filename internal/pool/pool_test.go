package pool

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestReusesWaitingGoroutines hands items one after another to a pool,
// each once the goroutine that ran the one before waits again: the
// goroutines started run them all. A goroutine counts itself waiting just
// before it is ready to be handed an item, so Go may, rarely, find it not
// yet ready and start another (which the 2-core CI saw once in many runs):
// a few goroutines, never one per item.
func TestReusesWaitingGoroutines(t *testing.T) {
	t.Parallel()
	done := make(chan int)
	p := New(time.Minute, func(i int) bool {
		done <- i
		return true
	})
	const items = 50
	for i := range items {
		p.Go(i)
		require.Equal(t, i, <-done)
		require.Eventually(t, func() bool { return p.waiting.Load() >= 1 }, 5*time.Second, time.Millisecond)
	}
	require.Eventually(t, func() bool { return p.waiting.Load() == p.started.Load() }, 5*time.Second, time.Millisecond,
		"every goroutine started waits for the next item")
	require.Less(t, p.started.Load(), int32(items/5), "goroutines were not reused")
	p.Close()
	require.Zero(t, p.waiting.Load())
}

// TestRunsItemsConcurrently starts more items than are running: each gets
// a goroutine of its own at once, and Go never blocks.
func TestRunsItemsConcurrently(t *testing.T) {
	t.Parallel()
	const n = 20
	var started sync.WaitGroup
	started.Add(n)
	release := make(chan struct{})
	var ran atomic.Int32
	p := New(time.Minute, func(int) bool {
		started.Done()
		<-release
		ran.Add(1)
		return true
	})
	for i := range n {
		p.Go(i)
	}
	started.Wait() // all n run at once
	close(release)
	p.Close() // waits for the n runs
	require.EqualValues(t, n, ran.Load())
	require.EqualValues(t, n, p.started.Load())
}

// TestIdleGoroutinesEnd checks that a goroutine waiting longer than the
// idle time ends, and that the pool then starts a new one.
func TestIdleGoroutinesEnd(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	p := New(10*time.Millisecond, func(int) bool { runs.Add(1); return true })
	p.Go(1)
	require.Eventually(t, func() bool { return runs.Load() == 1 && p.waiting.Load() == 0 }, 5*time.Second, time.Millisecond)
	time.Sleep(20 * time.Millisecond) // past the idle time: the first goroutine has ended
	p.Go(2)
	require.Eventually(t, func() bool { return runs.Load() == 2 }, 5*time.Second, time.Millisecond)
	p.Close()
	require.EqualValues(t, 2, p.started.Load())
}

// TestCloseLeavesReleasedGoroutines checks that Close does not wait for a
// goroutine stuck in a run that was released, and that the goroutine ends
// once the run returns false (the leak check in TestMain fails otherwise).
func TestCloseLeavesReleasedGoroutines(t *testing.T) {
	t.Parallel()
	stuck := make(chan struct{})
	returned := make(chan struct{})
	p := New(time.Minute, func(int) bool {
		<-stuck
		close(returned)
		return false
	})
	p.Go(1)
	p.Release()
	closed := make(chan struct{})
	go func() { p.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for a released goroutine")
	}
	close(stuck)
	<-returned
	require.Zero(t, p.waiting.Load(), "a released goroutine went back to waiting")
}
