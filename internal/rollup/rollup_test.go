package rollup_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/rollup"
)

func TestRecorderGathersPerTopicAndMinute(t *testing.T) {
	t.Parallel()
	var r rollup.Recorder
	at := time.Date(2026, 11, 20, 12, 30, 15, 0, time.UTC)
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() { r.Add("mail", at, i%10 != 0, 20*time.Millisecond) })
	}
	wg.Wait()
	r.Add("mail", at.Add(time.Minute), true, time.Second)
	r.Add("pay", at, false, -time.Second) // a clock that went back: 0
	points := r.Take()
	require.Len(t, points, 3)
	byKey := map[string]driver.MetricsPoint{}
	for _, p := range points {
		byKey[p.Topic+p.Start.Format("15:04")] = p
	}
	mail := byKey["mail12:30"]
	require.Equal(t, at.Truncate(time.Minute), mail.Start)
	require.Equal(t, int64(90), mail.Completed)
	require.Equal(t, int64(10), mail.Failed)
	require.Equal(t, int64(100*20_000), mail.DurationSum)
	require.Equal(t, int64(100), mail.Histogram[driver.MetricsBucketOf(20*time.Millisecond)])
	require.Equal(t, int64(1), byKey["pay12:30"].Histogram[0])
	require.Empty(t, r.Take(), "taken")

	r.Put(points)
	r.Add("mail", at, true, 20*time.Millisecond)
	again := r.Take()
	require.Len(t, again, 3)
	for _, p := range again {
		if p.Topic == "mail" && p.Start.Equal(mail.Start) {
			require.Equal(t, int64(91), p.Completed, "put back and added to")
		}
	}
}

func TestBuckets(t *testing.T) {
	t.Parallel()
	require.Equal(t, time.Millisecond, driver.MetricsBucketBound(0))
	require.Equal(t, 1500*time.Microsecond, driver.MetricsBucketBound(1))
	require.Greater(t, driver.MetricsBucketBound(driver.MetricsBuckets-2), 10*time.Minute)
	for _, d := range []time.Duration{0, time.Microsecond, time.Millisecond, 7 * time.Millisecond, time.Second, time.Hour} {
		i := driver.MetricsBucketOf(d)
		require.Less(t, d, driver.MetricsBucketBound(i), d)
		if i > 0 {
			require.GreaterOrEqual(t, d, driver.MetricsBucketBound(i-1), d)
		}
	}
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	var h [driver.MetricsBuckets]int64
	require.Zero(t, rollup.Percentile(&h, 0.5))
	// 100 durations of 1..100 ms: every percentile within a bucket's
	// ratio of the true one.
	for ms := 1; ms <= 100; ms++ {
		h[driver.MetricsBucketOf(time.Duration(ms)*time.Millisecond)]++
	}
	for _, tc := range []struct {
		q    float64
		true time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.95, 95 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {0.01, time.Millisecond}} {
		got := rollup.Percentile(&h, tc.q)
		require.InDelta(t, 1, float64(got)/float64(tc.true), 0.5, "q %v: %s against %s", tc.q, got, tc.true)
	}
	require.LessOrEqual(t, rollup.Percentile(&h, 0.5), rollup.Percentile(&h, 0.95))
	var slow [driver.MetricsBuckets]int64
	slow[driver.MetricsBuckets-1] = 3
	require.Equal(t, driver.MetricsBucketBound(driver.MetricsBuckets-2), rollup.Percentile(&slow, 0.99), "the last bucket's lower bound")
}
