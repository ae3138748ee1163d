package tick_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/testkit/exectest"
	"github.com/sluicehq/sluice/internal/tick"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestEveryCallsAgainAndAgainUntilTheContextEnds(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	stop := exectest.Background(t, func(ctx context.Context) {
		tick.Every(ctx, time.Millisecond, func() { calls.Add(1) })
	})
	require.Eventually(t, func() bool { return calls.Load() >= 3 }, 5*time.Second, time.Millisecond)
	stop()
	after := calls.Load()
	time.Sleep(10 * time.Millisecond)
	require.Equal(t, after, calls.Load(), "no call after Every returned")
}

func TestEveryWaitsOneIntervalBeforeTheFirstCall(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	stop := exectest.Background(t, func(ctx context.Context) {
		tick.Every(ctx, time.Hour, func() { calls.Add(1) })
	})
	time.Sleep(10 * time.Millisecond)
	stop()
	require.Zero(t, calls.Load())
}

func TestNowAndEveryCallsAtOnceThenEveryInterval(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	stop := exectest.Background(t, func(ctx context.Context) {
		tick.NowAndEvery(ctx, time.Hour, func() { calls.Add(1) })
	})
	require.Eventually(t, func() bool { return calls.Load() == 1 }, 5*time.Second, time.Millisecond)
	stop()
	require.Equal(t, int64(1), calls.Load(), "the next call waits an interval")

	var later atomic.Int64
	exectest.Background(t, func(ctx context.Context) {
		tick.NowAndEvery(ctx, time.Millisecond, func() { later.Add(1) })
	})
	require.Eventually(t, func() bool { return later.Load() >= 3 }, 5*time.Second, time.Millisecond)
}

func TestNowAndEveryCallsOnceEvenIfTheContextHasEnded(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	calls := 0
	tick.NowAndEvery(ctx, time.Millisecond, func() { calls++ })
	require.Equal(t, 1, calls)
	tick.Every(ctx, time.Millisecond, func() { calls++ })
	require.Equal(t, 1, calls)
}

func TestCallsNeverOverlap(t *testing.T) {
	t.Parallel()
	var running, overlaps, calls atomic.Int64
	slow := make(chan struct{})
	stop := exectest.Background(t, func(ctx context.Context) {
		tick.Every(ctx, time.Millisecond, func() {
			if running.Add(1) > 1 {
				overlaps.Add(1)
			}
			if calls.Add(1) == 1 {
				<-slow // hold the first call through many ticks
			}
			running.Add(-1)
		})
	})
	time.Sleep(50 * time.Millisecond)
	require.Equal(t, int64(1), calls.Load(), "no call starts while one runs")
	close(slow)
	require.Eventually(t, func() bool { return calls.Load() >= 5 }, 5*time.Second, time.Millisecond)
	stop()
	require.Zero(t, overlaps.Load())
}

func TestEveryOrKickedCallsOnKicksNoCloserThanTheGap(t *testing.T) {
	t.Parallel()
	kick := make(chan struct{}, 1)
	calls := make(chan bool, 100)
	const gap = time.Second
	stop := exectest.Background(t, func(ctx context.Context) {
		tick.EveryOrKicked(ctx, time.Hour, gap, kick, func(kicked bool) { calls <- kicked })
	})
	defer stop()
	// A first kick calls at once; the kicks within the gap after it make
	// one more call, once the gap has passed.
	kick <- struct{}{}
	require.True(t, <-calls)
	for range 5 {
		kick <- struct{}{}
	}
	select {
	case <-calls:
		t.Fatal("a kick within the gap called at once")
	case <-time.After(gap / 4):
	}
	require.True(t, <-calls)
	select {
	case kicked := <-calls:
		t.Fatalf("a call (kicked=%v) beyond the one the kicks within the gap make", kicked)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestEveryOrKickedTicksWithoutKicks(t *testing.T) {
	t.Parallel()
	calls := make(chan bool, 100)
	stop := exectest.Background(t, func(ctx context.Context) {
		tick.EveryOrKicked(ctx, time.Millisecond, time.Hour, nil, func(kicked bool) { calls <- kicked })
	})
	defer stop()
	require.False(t, <-calls)
	require.False(t, <-calls)
}
