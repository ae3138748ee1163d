package driver

import (
	"context"
	"slices"
	"time"
)

// MetricsExecutor holds the operations of the metrics store: per topic
// and minute, how many attempts completed and failed and a histogram of
// how long they ran, added to by every client and read by dashboards.
// Its rows grow with topics and minutes, never with jobs, so reading a
// window costs the same at any rate of jobs. Every [Executor] implements
// it.
type MetricsExecutor interface {
	// MetricsAdd adds each point's counts, sum and histogram to the
	// stored point of its topic and minute, creating it if needed. Adders
	// running at once lose nothing.
	MetricsAdd(ctx context.Context, params *MetricsAddParams) error

	// MetricsRead returns, for the topics Topics selects (every topic
	// when empty), the stored points of the minutes from From (included)
	// to To (excluded) summed per topic and per Bucket of time (aligned
	// on the Unix epoch), sorted by topic, then time. Drivers keep the
	// hours' sums too, and read them for buckets of whole hours from a
	// whole hour: the same figures, from a sixtieth of the rows.
	MetricsRead(ctx context.Context, params *MetricsReadParams) ([]MetricsPoint, error)

	// MetricsClean deletes the points of minutes before Before, and
	// returns how many.
	MetricsClean(ctx context.Context, params *MetricsCleanParams) (int, error)
}

// MetricsBuckets is how many buckets a histogram of durations has. The
// upper bound of bucket i is MetricsBucketBound(i); the last one has
// none.
const MetricsBuckets = 35

// MetricsBucketBound returns the upper bound (excluded) of bucket i of a
// histogram of durations: 1 ms times 1.5 to the power i, from 1 ms to
// about 11 minutes; the last bucket holds the rest. Durations within 1.5
// of each other share a bucket, so a percentile read from the histogram
// is within that ratio of the true one.
func MetricsBucketBound(i int) time.Duration {
	if i >= MetricsBuckets-1 {
		return 1<<63 - 1
	}
	return metricsBounds[i]
}

// metricsBounds are the bounds MetricsBucketBound returns, computed once:
// every finished attempt looks its bucket up.
var metricsBounds = func() (b [MetricsBuckets - 1]time.Duration) {
	d := float64(time.Millisecond)
	for i := range b {
		b[i] = time.Duration(d)
		d *= 1.5
	}
	return b
}()

// MetricsBucketOf returns the bucket of a duration.
func MetricsBucketOf(d time.Duration) int {
	i, _ := slices.BinarySearch(metricsBounds[:], d)
	if i < len(metricsBounds) && metricsBounds[i] == d {
		i++ // a bound is excluded from its bucket
	}
	return i
}

// MetricsPoint is what the attempts of one topic did in one stretch of
// time: a minute as stored, or a bucket as read.
type MetricsPoint struct {
	// Topic is the jobs' topic; Start when the stretch starts, in UTC.
	Topic string
	Start time.Time
	// Completed and Failed count the attempts that completed their job,
	// and those whose worker failed (retried or not).
	Completed, Failed int64
	// DurationSum is the sum of their durations, in microseconds, and
	// Histogram counts them per bucket (see MetricsBucketBound).
	DurationSum int64
	Histogram   [MetricsBuckets]int64
}

// Add adds the figures of q to p's.
func (p *MetricsPoint) Add(q *MetricsPoint) {
	p.Completed += q.Completed
	p.Failed += q.Failed
	p.DurationSum += q.DurationSum
	for i, n := range q.Histogram {
		p.Histogram[i] += n
	}
}

// MetricsAddParams are the params of [MetricsExecutor.MetricsAdd].
type MetricsAddParams struct {
	// Points are added to the stored points; each Start is a whole
	// minute.
	Points []MetricsPoint
}

// MetricsReadParams are the params of [MetricsExecutor.MetricsRead].
type MetricsReadParams struct {
	// Topics, when not empty, selects these topics.
	Topics []string
	// From and To bound the minutes read.
	From, To time.Time
	// Bucket is the stretch points are summed over: a whole number of
	// minutes, at least one.
	Bucket time.Duration
}

// MetricsCleanParams are the params of [MetricsExecutor.MetricsClean].
type MetricsCleanParams struct {
	// Before: points of earlier minutes are deleted.
	Before time.Time
}
