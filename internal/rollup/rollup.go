// Package rollup gathers what a client's attempts did, per topic and
// minute, between the writes that add it to the metrics store (see
// driver.MetricsExecutor), and reads percentiles back from the store's
// histograms.
package rollup

import (
	"math"
	"sync"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// Recorder gathers attempts' outcomes and durations per topic and minute.
// Its zero value is ready; it is safe for use by several goroutines.
type Recorder struct {
	mu     sync.Mutex
	points map[key]*driver.MetricsPoint
}

// key names a point: a topic and a minute in Unix seconds.
type key struct {
	topic  string
	minute int64
}

// Add records one attempt of topic that ended at at: completed (or
// failed) after running for d.
func (r *Recorder) Add(topic string, at time.Time, completed bool, d time.Duration) {
	minute := at.Truncate(time.Minute)
	k := key{topic, minute.Unix()}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.points == nil {
		r.points = make(map[key]*driver.MetricsPoint)
	}
	p := r.points[k]
	if p == nil {
		p = &driver.MetricsPoint{Topic: topic, Start: minute.UTC()}
		r.points[k] = p
	}
	if completed {
		p.Completed++
	} else {
		p.Failed++
	}
	d = max(d, 0)
	p.DurationSum += d.Microseconds()
	p.Histogram[driver.MetricsBucketOf(d)]++
}

// Take returns the points gathered since the last Take, and forgets them.
func (r *Recorder) Take() []driver.MetricsPoint {
	r.mu.Lock()
	points := r.points
	r.points = nil
	r.mu.Unlock()
	out := make([]driver.MetricsPoint, 0, len(points))
	for _, p := range points {
		out = append(out, *p)
	}
	return out
}

// Put adds points back, as a write that failed leaves them: the next
// Take returns them, summed with what was gathered meanwhile.
func (r *Recorder) Put(points []driver.MetricsPoint) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.points == nil {
		r.points = make(map[key]*driver.MetricsPoint)
	}
	for _, p := range points {
		k := key{p.Topic, p.Start.Unix()}
		q := r.points[k]
		if q == nil {
			q = &driver.MetricsPoint{Topic: p.Topic, Start: p.Start}
			r.points[k] = q
		}
		q.Add(&p)
	}
}

// Percentile returns the q-th quantile (0 < q <= 1) of the durations h
// counts: the nearest rank's bucket, and within it a point as far, on a
// logarithmic scale, as the rank is among the bucket's durations. It is
// within a bucket's ratio (1.5) of the true nearest rank; a rank in the
// last bucket, which has no bound, is its lower bound. Zero for an empty
// histogram.
func Percentile(h *[driver.MetricsBuckets]int64, q float64) time.Duration {
	var n int64
	for _, c := range h {
		n += c
	}
	if n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(n)))
	rank = min(max(rank, 1), n)
	var before int64
	for i, c := range h {
		if before+c < rank {
			before += c
			continue
		}
		frac := float64(rank-before) / float64(c)
		upper := float64(driver.MetricsBucketBound(i))
		switch i {
		case 0:
			return time.Duration(upper * frac)
		case driver.MetricsBuckets - 1:
			return driver.MetricsBucketBound(i - 1)
		}
		lower := float64(driver.MetricsBucketBound(i - 1))
		return time.Duration(lower * math.Pow(upper/lower, frac))
	}
	return 0 // not reached: rank <= n
}
