package sqlitedriver_test

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/internal/testkit/clientbench"
)

// Client-level benchmarks with the default Config: what a user gets
// without tuning. Figures are recorded in docs/performance.md.

// benchDriver returns a driver over a fresh, migrated database file.
func benchDriver(b *testing.B) (*sqlitedriver.Driver, *sql.DB) {
	b.Helper()
	db, err := sqlitedriver.Open(filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	d := sqlitedriver.New(db)
	if err := d.Migrate(b.Context()); err != nil {
		b.Fatal(err)
	}
	return d, db
}

// backlog inserts n jobs of the benchmark topic with the given status in
// one SQL statement, so the Go heap stays out of the measurement.
func backlog(b *testing.B, db *sql.DB, n int, status string) {
	b.Helper()
	now := time.Now().Add(-time.Minute).UnixMicro()
	_, err := db.Exec(`WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ?)
		INSERT INTO sluice_jobs (id, topic, queue, priority, payload, status, attempt, max_retries, run_at, created_at, finalized_at)
		SELECT printf('%08x-0000-7000-8000-%012x', ?, i), 'bench', 'default', 0, '{"n":1}', ?, 0, 3, ? + i, ? + i,
			CASE WHEN ? = 'pending' THEN NULL ELSE ? END
		FROM seq`, n, time.Now().UnixNano()%(1<<32), status, now, now, status, now)
	if err != nil {
		b.Fatal(err)
	}
}

// burnDown works a backlog of n jobs that take jobTime, after finished
// completed jobs are put in the table.
func burnDown(b *testing.B, n, finished int, jobTime time.Duration) {
	for b.Loop() {
		b.StopTimer()
		d, db := benchDriver(b)
		if finished > 0 {
			backlog(b, db, finished, "completed")
		}
		backlog(b, db, n, "pending")
		b.StartTimer()
		clientbench.BurnDown(b, d, n, jobTime, 0)
	}
}

// BenchmarkWorkBacklog works a 100k backlog of no-op jobs with the default
// Config (10 workers).
func BenchmarkWorkBacklog(b *testing.B) { burnDown(b, clientbench.Size(100_000), 0, 0) }

// BenchmarkWorkBacklogLogging is BenchmarkWorkBacklog with jobs that log
// one record each through sluice.Logger, kept with the job.
func BenchmarkWorkBacklogLogging(b *testing.B) {
	burnDownWith(b, clientbench.BurnDownOptions{LogLine: true})
}

// burnDownWith works a backlog of 100k jobs with the options o.
func burnDownWith(b *testing.B, o clientbench.BurnDownOptions) {
	n := clientbench.Size(100_000)
	for b.Loop() {
		b.StopTimer()
		d, db := benchDriver(b)
		backlog(b, db, n, "pending")
		b.StartTimer()
		clientbench.BurnDownWith(b, d, n, o)
	}
}

// BenchmarkWorkBacklogObserved is BenchmarkWorkBacklog with middleware
// and hooks set that do nothing (clientbench.Observed).
func BenchmarkWorkBacklogObserved(b *testing.B) {
	burnDownWith(b, clientbench.BurnDownOptions{Configure: clientbench.Observed})
}

// BenchmarkWorkBacklogOneMillisecond works a backlog of jobs that take 1 ms
// each: with the default 10 workers, at most 10,000 jobs/s.
func BenchmarkWorkBacklogOneMillisecond(b *testing.B) {
	burnDown(b, clientbench.Size(20_000), 0, time.Millisecond)
}

// BenchmarkWorkBacklogWithFinishedRows is BenchmarkWorkBacklog with 1M
// completed jobs already in the table.
func BenchmarkWorkBacklogWithFinishedRows(b *testing.B) {
	n := clientbench.Size(100_000)
	burnDown(b, n, 10*n, 0)
}

// BenchmarkEnqueue enqueues one job per call from one goroutine.
func BenchmarkEnqueue(b *testing.B) {
	d, _ := benchDriver(b)
	clientbench.Enqueue(b, d, 1)
}

// BenchmarkEnqueueParallel enqueues one job per call from 16 goroutines;
// the driver's group commit writes concurrent enqueues together.
func BenchmarkEnqueueParallel(b *testing.B) {
	d, _ := benchDriver(b)
	clientbench.Enqueue(b, d, 16)
}

// BenchmarkEnqueueMany enqueues batches of 1,000 jobs.
func BenchmarkEnqueueMany(b *testing.B) {
	d, _ := benchDriver(b)
	clientbench.EnqueueMany(b, d, 1000)
}

// BenchmarkLatency measures enqueue-to-start latency in one process at a
// gentle rate: one job every 5 ms.
func BenchmarkLatency(b *testing.B) {
	for b.Loop() {
		d, _ := benchDriver(b)
		clientbench.Latency(b, d, 400, 5*time.Millisecond)
	}
}

// BenchmarkMemoryWithMillionPending works through part of a backlog of 1M
// pending jobs and reports the process's peak resident memory.
func BenchmarkMemoryWithMillionPending(b *testing.B) {
	pending, work := clientbench.Size(1_000_000), clientbench.Size(100_000)
	for b.Loop() {
		b.StopTimer()
		d, db := benchDriver(b)
		backlog(b, db, pending, "pending")
		b.StartTimer()
		stop := clientbench.PeakRSS()
		clientbench.BurnDown(b, d, work, 0, 0)
		b.ReportMetric(stop(), "rss_MiB")
	}
}

// BenchmarkWorkBacklogWaiting is BenchmarkWorkBacklog while 20,000 jobs
// wait for a job that never runs, which the release pass of the client
// looks at every poll interval.
func BenchmarkWorkBacklogWaiting(b *testing.B) {
	n := clientbench.Size(100_000)
	for b.Loop() {
		b.StopTimer()
		d, db := benchDriver(b)
		backlog(b, db, n, "pending")
		clientbench.Waiting(b, d, clientbench.Size(20_000))
		b.StartTimer()
		clientbench.BurnDownWith(b, d, n, clientbench.BurnDownOptions{})
	}
}

// BenchmarkWorkBacklogPayload200 and BenchmarkWorkBacklogEncrypted work 50k jobs of 200-byte
// payloads, enqueued through the client, with 500 workers (the
// burn_down settings), in clear and encrypted with AES-256-GCM: the
// ratio of the two is what encryption costs.
func BenchmarkWorkBacklogPayload200(b *testing.B) { burnDownSealed(b, false) }

// BenchmarkWorkBacklogEncrypted is BenchmarkWorkBacklogPayload200 with the payloads
// encrypted.
func BenchmarkWorkBacklogEncrypted(b *testing.B) { burnDownSealed(b, true) }

func burnDownSealed(b *testing.B, sealed bool) {
	n := clientbench.Size(50_000)
	for b.Loop() {
		b.StopTimer()
		d, _ := benchDriver(b)
		b.StartTimer()
		clientbench.BurnDownSealed(b, d, n, 500, sealed)
	}
}
