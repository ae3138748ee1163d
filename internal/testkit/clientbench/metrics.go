package clientbench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
)

// metricsTopics are the topics fillMetrics writes; every one has a point
// in every minute, as at a million jobs a day spread over them.
const metricsTopics = 10

// fillMetrics fills the metrics store of d with a point per topic and
// minute for the store's whole keep (8 days; an hour under
// SLUICE_BENCH_SMALL), ending now: what any rate of jobs above a few a
// minute leaves, its size set by topics and minutes alone.
func fillMetrics[TTx any](b *testing.B, d driver.Driver[TTx]) {
	b.Helper()
	keep := sluice.DefaultMetricsKeep
	if Small() {
		keep = time.Hour
	}
	end := time.Now().UTC().Truncate(time.Minute)
	var points []driver.MetricsPoint
	flush := func() {
		if err := d.Executor().MetricsAdd(context.Background(), &driver.MetricsAddParams{Points: points}); err != nil {
			b.Fatal(err)
		}
		points = points[:0]
	}
	for at := end.Add(-keep); !at.After(end); at = at.Add(time.Minute) {
		for t := range metricsTopics {
			p := driver.MetricsPoint{Topic: fmt.Sprintf("topic_%d", t), Start: at, Completed: 70, Failed: 1, DurationSum: 71 * 40_000}
			p.Histogram[driver.MetricsBucketOf(40*time.Millisecond)] = 60
			p.Histogram[driver.MetricsBucketOf(400*time.Millisecond)] = 11
			points = append(points, p)
		}
		if len(points) >= 2000 {
			flush()
		}
	}
	flush()
}

// metricsQueries measures the metrics page's queries, Metrics over an
// hour, a day and a week (the page's windows) of every topic, and of one,
// reporting ms/op and p95_ms: the budget is a p95 of 100 ms.
func metricsQueries[TTx any](b *testing.B, d driver.Driver[TTx], c *sluice.Client[TTx]) {
	fillMetrics(b, d)
	windows := []time.Duration{time.Hour, 24 * time.Hour, 7 * 24 * time.Hour}
	if Small() {
		windows = windows[:1]
	}
	for _, w := range windows {
		for _, topics := range [][]string{nil, {"topic_3"}} {
			name := fmt.Sprintf("Metrics/%s/all", w)
			if topics != nil {
				name = fmt.Sprintf("Metrics/%s/one", w)
			}
			b.Run(name, func(b *testing.B) {
				measureP95(b, func(ctx context.Context) error {
					_, err := c.Metrics(ctx, &sluice.MetricsFilter{Window: w, Topics: topics})
					return err
				})
			})
		}
	}
}
