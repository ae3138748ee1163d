package sluice

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/rollup"
)

// Defaults of MetricsConfig.
const (
	// DefaultMetricsInterval is how often a started client adds what its
	// attempts did to the metrics store.
	DefaultMetricsInterval = 10 * time.Second
	// DefaultMetricsKeep is how long the metrics store keeps its minutes.
	DefaultMetricsKeep = 8 * 24 * time.Hour
	// DefaultMetricsWindow is Metrics' window when MetricsFilter.Window
	// is 0.
	DefaultMetricsWindow = time.Hour
)

// MetricsConfig configures the metrics store, which Metrics reads: per
// topic and minute, how many attempts completed and failed, and how long
// they ran. Every started client adds what its attempts did (those whose
// outcome it recorded: not those a worker acked or nacked in its own
// transaction) every Interval, in one statement per topic and minute.
type MetricsConfig struct {
	// Interval is how often (at least 1 s); a negative Interval records
	// nothing. Default 10 s: the store lags the jobs by at most that.
	Interval time.Duration
	// Keep is how long the store keeps its minutes (at least an hour);
	// every started client deletes older ones with the jobs it cleans.
	// Default 8 days.
	Keep time.Duration
}

// fill validates m and fills in its defaults.
func (m *MetricsConfig) fill() error {
	if m.Interval > 0 && m.Interval < time.Second {
		return &ConfigError{Field: "Metrics.Interval", Reason: "must be at least 1s, or negative for none"}
	}
	m.Interval = orDefault(m.Interval, DefaultMetricsInterval)
	if m.Keep < 0 || m.Keep > 0 && m.Keep < time.Hour {
		return &ConfigError{Field: "Metrics.Keep", Reason: "must be at least an hour"}
	}
	m.Keep = orDefault(m.Keep, DefaultMetricsKeep)
	return nil
}

// recordMetrics adds the attempt of row, which ended at now with fin's
// outcome, to the run's recorder: a completion, or a failure when the
// worker failed (a retry, a failure for good, a cancel with an error).
func (r *run) recordMetrics(row *JobRow, fin *driver.JobFinalize, now time.Time) {
	if r.cfg.Metrics.Interval < 0 || fin.Snooze || fin.Status != StatusCompleted && fin.Error == nil {
		return
	}
	r.metrics.Add(row.Topic, now, fin.Status == StatusCompleted, now.Sub(row.AttemptedAt))
}

// writeMetrics adds what the run's attempts did to the store every
// Metrics.Interval, and once more when ctx ends (the completer has
// written every outcome by then).
func (r *run) writeMetrics(ctx context.Context) {
	if r.cfg.Metrics.Interval < 0 {
		return
	}
	write := func(ctx context.Context) {
		points := r.metrics.Take()
		if len(points) == 0 {
			return
		}
		if err := r.exec.MetricsAdd(ctx, &driver.MetricsAddParams{Points: points}); err != nil {
			r.metrics.Put(points) // the next write tries again
			if ctx.Err() == nil {
				r.cfg.Logger.Warn("sluice: writing metrics failed", "error", err)
			}
		}
	}
	for {
		select {
		case <-ctx.Done():
			last, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			write(last)
			cancel()
			return
		case <-time.After(r.cfg.Metrics.Interval):
			write(ctx)
		}
	}
}

// cleanMetrics deletes the store's minutes older than Metrics.Keep.
func (r *run) cleanMetrics(ctx context.Context) {
	before := r.cfg.now().Add(-r.cfg.Metrics.Keep)
	if _, err := r.exec.MetricsClean(ctx, &driver.MetricsCleanParams{Before: before}); err != nil && ctx.Err() == nil {
		r.cfg.Logger.Warn("sluice: deleting old metrics failed", "error", err)
	}
}

// MetricsFilter selects what Metrics sums up. The zero value sums up
// every topic over the last DefaultMetricsWindow.
type MetricsFilter struct {
	// Topics, when not empty, selects these topics.
	Topics []string
	// Window is how far back to look, in whole minutes: 0 means
	// DefaultMetricsWindow; at most the store's Keep.
	Window time.Duration
	// Bucket is the stretch of each point of the series, in whole
	// minutes, at most MaxStatsBuckets of them in the window: 0 means
	// the window over 60, rounded up to a minute, or to an hour when
	// longer (a week's buckets are 3 hours). Buckets of whole hours are
	// read from the store's sums per hour, a sixtieth of its rows.
	Bucket time.Duration
}

// Metrics is what the attempts of each topic did over a window, read from
// the metrics store (see MetricsConfig).
type Metrics struct {
	// From and To are the window, To the end of the current minute;
	// Bucket the stretch of each point of the series.
	From, To time.Time
	Bucket   time.Duration
	// Topics are the topics with attempts in the window, sorted.
	Topics []TopicMetrics
}

// TopicMetrics is what the attempts of one topic did over a window.
type TopicMetrics struct {
	// Topic is the topic; Completed and Failed count its attempts that
	// completed and that failed (retried or not).
	Topic             string
	Completed, Failed int64
	// FailureRate is Failed / (Completed + Failed).
	FailureRate float64
	// AvgDuration is the mean of the attempts' durations; P50, P95 and
	// P99 their percentiles, read from a histogram whose buckets are 1.5
	// times wider than the last, so each is within that ratio of the
	// exact one.
	AvgDuration, P50, P95, P99 time.Duration
	// Series are the same figures per Bucket, oldest first, every bucket
	// of the window present (those without attempts at zero).
	Series []MetricsBucket
}

// MetricsBucket is what the attempts of a topic did in one bucket of
// time.
type MetricsBucket struct {
	// Start is when the bucket starts, in UTC.
	Start             time.Time
	Completed, Failed int64
	// P50, P95 and P99 are the percentiles of the attempts' durations.
	P50, P95, P99 time.Duration
}

// Metrics sums up the metrics store (see MetricsConfig) over a window:
// per topic, how many attempts completed and failed, the failure rate and
// the percentiles of their durations, in all and per bucket of time. It
// reads the store's minutes, never the jobs, so it costs the same
// whatever the rate of jobs. A nil f means the zero MetricsFilter; an
// invalid one is a *FilterError (ErrInvalidFilter).
func (c *Client[TTx]) Metrics(ctx context.Context, f *MetricsFilter) (*Metrics, error) {
	if f == nil {
		f = &MetricsFilter{}
	}
	window, bucket, err := metricsWindow(f, c.cfg.Metrics.Keep)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	if _, err := jobFilter(nil, f.Topics, nil); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	to := c.now().Truncate(time.Minute).Add(time.Minute)
	from := bucketStart(to.Add(-window), bucket)
	points, err := c.exec.MetricsRead(ctx, &driver.MetricsReadParams{Topics: f.Topics, From: from, To: to, Bucket: bucket})
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	m := &Metrics{From: from, To: to, Bucket: bucket, Topics: []TopicMetrics{}}
	for i := 0; i < len(points); {
		j := i
		for j < len(points) && points[j].Topic == points[i].Topic {
			j++
		}
		m.Topics = append(m.Topics, topicMetrics(points[i:j], from, to, bucket))
		i = j
	}
	return m, nil
}

// metricsWindow validates f's window and bucket and fills in their
// defaults.
func metricsWindow(f *MetricsFilter, keep time.Duration) (window, bucket time.Duration, err error) {
	window = orDefault(f.Window, DefaultMetricsWindow)
	switch {
	case window < time.Minute || window%time.Minute != 0:
		return 0, 0, &FilterError{Field: "Window", Reason: fmt.Sprintf("%s is not a whole number of minutes", window)}
	case window > keep:
		return 0, 0, &FilterError{Field: "Window", Reason: fmt.Sprintf("%s is longer than the store keeps (%s)", window, keep)}
	}
	bucket = f.Bucket
	if bucket == 0 {
		bucket = max((window/60+time.Minute-1)/time.Minute*time.Minute, time.Minute)
		if bucket > time.Hour {
			// Whole hours, which the store reads from its hours' sums.
			bucket = (bucket + time.Hour - 1) / time.Hour * time.Hour
		}
	}
	switch {
	case bucket < time.Minute || bucket%time.Minute != 0:
		return 0, 0, &FilterError{Field: "Bucket", Reason: fmt.Sprintf("%s is not a whole number of minutes", bucket)}
	case window/bucket > MaxStatsBuckets:
		return 0, 0, &FilterError{Field: "Bucket", Reason: fmt.Sprintf("%s makes more than %d buckets of the %s window", bucket, MaxStatsBuckets, window)}
	}
	return window, bucket, nil
}

// topicMetrics sums up the points of one topic, sorted by time, into its
// figures and a series with every bucket from from to to.
func topicMetrics(points []driver.MetricsPoint, from, to time.Time, bucket time.Duration) TopicMetrics {
	tm := TopicMetrics{Topic: points[0].Topic}
	var all driver.MetricsPoint
	i := 0
	for at := from; at.Before(to); at = at.Add(bucket) {
		b := MetricsBucket{Start: at}
		if i < len(points) && points[i].Start.Equal(at) {
			p := &points[i]
			b.Completed, b.Failed = p.Completed, p.Failed
			b.P50, b.P95, b.P99 = rollup.Percentile(&p.Histogram, .5), rollup.Percentile(&p.Histogram, .95),
				rollup.Percentile(&p.Histogram, .99)
			all.Add(p)
			i++
		}
		tm.Series = append(tm.Series, b)
	}
	tm.Completed, tm.Failed = all.Completed, all.Failed
	if n := all.Completed + all.Failed; n > 0 {
		tm.FailureRate = float64(all.Failed) / float64(n)
		tm.AvgDuration = time.Duration(all.DurationSum/n) * time.Microsecond
	}
	tm.P50, tm.P95, tm.P99 = rollup.Percentile(&all.Histogram, .5), rollup.Percentile(&all.Histogram, .95),
		rollup.Percentile(&all.Histogram, .99)
	return tm
}
