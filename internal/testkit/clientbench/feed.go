package clientbench

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
)

// BurnDownFeed measures what a change feed costs a client working a
// backlog: after one run to warm up, reps times it works a fresh backlog
// of n no-op jobs (from fresh, which also returns how to release it) with
// workers workers without a feed, and another with a subscriber reading
// every change of the client's feed, in alternating order. It reports the
// median jobs/s of each, and the median of each repetition's ratio (with
// the feed over without), which the drift of a shared machine's load
// disturbs less than the ratio of the medians.
func BurnDownFeed[TTx any](b *testing.B, fresh func() (driver.Driver[TTx], func()), n, workers, reps int) {
	run := func(watched bool) float64 {
		b.StopTimer()
		d, release := fresh()
		defer release()
		b.StartTimer()
		return burnDown(b, d, n, BurnDownOptions{Workers: workers, Watched: watched})
	}
	var off, on, ratios []float64
	for b.Loop() {
		run(false) // warm-up: the first run of a process is slower
		for i := range reps {
			rates := map[bool]float64{}
			for _, watched := range []bool{i%2 == 1, i%2 == 0} {
				rates[watched] = run(watched)
				b.Logf("repetition %d, feed %t: %.0f jobs/s", i+1, watched, rates[watched])
			}
			off, on = append(off, rates[false]), append(on, rates[true])
			ratios = append(ratios, rates[true]/rates[false])
		}
	}
	b.ReportMetric(median(off), "jobs/s_off")
	b.ReportMetric(median(on), "jobs/s_feed")
	b.ReportMetric(median(ratios), "feed/off")
	d, release := fresh()
	defer release()
	b.ReportMetric(countDuringBurnDown(b, d, n, workers), "count_ms")
}

// countDuringBurnDown works a backlog of n jobs with a feed subscriber,
// while it times, every 100 ms, the count a feed makes at each read, and
// returns its mean in ms: what the feed costs the database per interval
// while more changes than it reads.
func countDuringBurnDown[TTx any](b *testing.B, d driver.Driver[TTx], n, workers int) float64 {
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var total time.Duration
	var counts int
	wg.Go(func() {
		ticker := time.NewTicker(100 * time.Millisecond)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
			now := time.Now()
			since := now.Add(-sluice.DefaultFeedLag - sluice.DefaultFeedInterval)
			t0 := time.Now()
			_, err := d.Executor().JobChanges(ctx, &driver.JobChangesParams{Running: true, CountOnly: true,
				CreatedFrom: idFloor(since), CreatedBefore: idFloor(now.Add(sluice.DefaultFeedLag)),
				FinalizedSince: since, ActedSince: since, Limit: sluice.DefaultFeedMaxRows + 1})
			if err == nil {
				total += time.Since(t0)
				counts++
			}
		}
	})
	burnDown(b, d, n, BurnDownOptions{Workers: workers, Watched: true})
	stop()
	wg.Wait()
	if counts == 0 {
		return 0
	}
	return ms(total / time.Duration(counts))
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
