package clientbench

import (
	"slices"
	"testing"

	"github.com/sluicehq/sluice/driver"
)

// BurnDownFeed measures what a change feed costs a client working a
// backlog: reps times, it works a fresh backlog of n no-op jobs (from
// fresh, which also returns how to release it) with workers workers
// without a feed, and another with a subscriber reading every change of
// the client's feed, in alternating order, and reports the median jobs/s
// of each and the ratio of the medians (with the feed over without).
func BurnDownFeed[TTx any](b *testing.B, fresh func() (driver.Driver[TTx], func()), n, workers, reps int) {
	var off, on []float64
	for b.Loop() {
		for i := range reps {
			for _, watched := range []bool{i%2 == 1, i%2 == 0} {
				b.StopTimer()
				d, release := fresh()
				b.StartTimer()
				rate := burnDown(b, d, n, 0, workers, watched)
				if watched {
					on = append(on, rate)
				} else {
					off = append(off, rate)
				}
				release()
			}
		}
	}
	b.ReportMetric(median(off), "jobs/s_off")
	b.ReportMetric(median(on), "jobs/s_feed")
	b.ReportMetric(median(on)/median(off), "feed/off")
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
