package sqlitedriver_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/clientbench"
)

// Benchmarks of the web API and the change feed (sluiceweb, Client.Watch).
// Figures are recorded in docs/performance.md.

// BenchmarkEnqueueHTTPParallel enqueues one job per request through POST
// api/jobs from 16 keep-alive connections: compare with
// BenchmarkEnqueueParallel.
func BenchmarkEnqueueHTTPParallel(b *testing.B) {
	d, _ := benchDriver(b)
	clientbench.EnqueueHTTP(b, d, 16)
}

// BenchmarkEnqueueHTTPVersusDirect compares, five times in alternating order,
// 20,000 enqueues through POST api/jobs with as many direct Enqueue calls,
// both from 16 goroutines, and reports the ratio of their medians.
func BenchmarkEnqueueHTTPVersusDirect(b *testing.B) {
	d, _ := benchDriver(b)
	clientbench.EnqueueHTTPVersusDirect(b, d, 16, clientbench.Size(20_000), 5)
}

// BenchmarkFeed measures the database calls of a client's change feed with
// 1 and 100 event streams open while jobs are worked.
func BenchmarkFeed(b *testing.B) {
	for _, subs := range []int{1, 100} {
		b.Run(map[int]string{1: "Streams1", 100: "Streams100"}[subs], func(b *testing.B) {
			d, _ := benchDriver(b)
			clientbench.Feed(b, d, subs, 5*time.Second)
		})
	}
}

// BenchmarkWorkBacklogFeed works backlogs of 200k no-op jobs with 500
// workers, with and without a change feed subscriber, alternately, five
// times each after a warm-up.
func BenchmarkWorkBacklogFeed(b *testing.B) {
	n := clientbench.Size(200_000)
	clientbench.BurnDownFeed(b, func() (driver.Driver[*sql.Tx], func()) {
		d, db := benchDriver(b)
		backlog(b, db, n, "pending")
		return d, func() {}
	}, n, 500, 5)
}
