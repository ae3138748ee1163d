package pgxdriver_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/clientbench"
)

// Benchmarks of the web API and the change feed (sluiceweb, Client.Watch),
// against the Postgres server named by SLUICE_TEST_DATABASE_URL. Figures
// are recorded in docs/performance.md.

// BenchmarkClientEnqueueHTTPParallel enqueues one job per request through
// POST api/jobs from 16 keep-alive connections: compare with
// BenchmarkClientEnqueueParallel.
func BenchmarkClientEnqueueHTTPParallel(b *testing.B) {
	d, _ := benchDriver(b)
	clientbench.EnqueueHTTP(b, d, 16)
}

// BenchmarkClientEnqueueHTTPVersusDirect compares, five times in alternating order,
// 20,000 enqueues through POST api/jobs with as many direct Enqueue calls,
// both from 16 goroutines, and reports the ratio of their medians.
func BenchmarkClientEnqueueHTTPVersusDirect(b *testing.B) {
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

// BenchmarkClientWorkBacklogFeed works backlogs of 300k no-op jobs with
// 2,000 workers, with and without a change feed subscriber, alternately, five
// times each after a warm-up.
func BenchmarkClientWorkBacklogFeed(b *testing.B) {
	n := clientbench.Size(300_000)
	clientbench.BurnDownFeed(b, func() (driver.Driver[pgx.Tx], func()) {
		d, pool := benchDriver(b)
		backlog(b, pool, n, "pending")
		// Each run's pool is closed when it ends (closing it again at
		// cleanup does nothing): eleven pools of 20 connections open at
		// once would pass the server's limit.
		return d, pool.Close
	}, n, 2000, 5)
}
