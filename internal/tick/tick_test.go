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
