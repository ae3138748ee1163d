package pgxdriver_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/driver/pgxdriver"
	"github.com/sluicehq/sluice/internal/testkit/clientbench"
	"github.com/sluicehq/sluice/internal/testkit/dbtest"
)

// Client-level benchmarks with the default Config, against the Postgres
// server named by SLUICE_TEST_DATABASE_URL. Figures are recorded in
// docs/performance.md.

// benchDriver returns a driver over a fresh schema, with a pool of 20
// connections.
func benchDriver(b *testing.B) (*pgxdriver.Driver, *pgxpool.Pool) {
	b.Helper()
	url := dbtest.URL(b)
	schema := dbtest.Schema(b, url)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.MaxConns = 20
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	d := pgxdriver.New(pool, pgxdriver.WithSchema(schema))
	if err := d.Migrate(context.Background()); err != nil {
		b.Fatal(err)
	}
	return d, pool
}

// backlog inserts n jobs of the benchmark topic with the given status in
// one statement, then analyzes the table as autovacuum would.
func backlog(b *testing.B, pool *pgxpool.Pool, n int, status string) {
	b.Helper()
	ctx := context.Background()
	now := time.Now().Add(-time.Minute)
	_, err := pool.Exec(ctx, `INSERT INTO sluice_jobs (id, topic, queue, priority, payload, status, attempt, max_retries,
			run_at, created_at, finalized_at)
		SELECT gen_random_uuid(), 'bench', 'default', 0, '{"n":1}', $2, 0, 3,
			$3::timestamptz + i * interval '1 microsecond', $3::timestamptz,
			CASE WHEN $2 = 'pending' THEN NULL ELSE $3::timestamptz END
		FROM generate_series(1, $1) AS i`, n, status, now)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE sluice_jobs`); err != nil {
		b.Fatal(err)
	}
}

func burnDown(b *testing.B, n, finished, workers int) {
	for b.Loop() {
		b.StopTimer()
		d, pool := benchDriver(b)
		if finished > 0 {
			backlog(b, pool, finished, "completed")
		}
		backlog(b, pool, n, "pending")
		b.StartTimer()
		stop := clientbench.PeakRSS()
		clientbench.BurnDown(b, d, n, 0, workers)
		b.ReportMetric(stop(), "rss_MiB")
	}
}

// BenchmarkClientWorkBacklog works a backlog of 1M no-op jobs with the
// default Config (10 workers).
func BenchmarkClientWorkBacklog(b *testing.B) { burnDown(b, clientbench.Size(1_000_000), 0, 0) }

// tunedWorkers is the worker count of the tuned burn-down: enough that
// each claim and each completion batch carries hundreds of jobs.
const tunedWorkers = 1000

// BenchmarkClientWorkBacklogTuned works a backlog of 1M no-op jobs with
// tunedWorkers workers.
func BenchmarkClientWorkBacklogTuned(b *testing.B) {
	burnDown(b, clientbench.Size(1_000_000), 0, tunedWorkers)
}

// BenchmarkClientWorkBacklog100k works a backlog of 100k no-op jobs with
// the default Config.
func BenchmarkClientWorkBacklog100k(b *testing.B) { burnDown(b, clientbench.Size(100_000), 0, 0) }

// BenchmarkClientWorkBacklog100kLogging is BenchmarkClientWorkBacklog100k
// with jobs that log one record each through sluice.Logger, kept with the
// job.
func BenchmarkClientWorkBacklog100kLogging(b *testing.B) {
	burnDownWith(b, clientbench.BurnDownOptions{LogLine: true})
}

// BenchmarkClientWorkBacklog100kTuned works a backlog of 100k no-op jobs
// with tunedWorkers workers; BenchmarkClientWorkBacklog100kTunedLogging
// is the same with a log line per job, as bench/'s burn_down with
// sluice-logged.
func BenchmarkClientWorkBacklog100kTuned(b *testing.B) {
	burnDownWith(b, clientbench.BurnDownOptions{Workers: tunedWorkers})
}

// BenchmarkClientWorkBacklog100kTunedLogging is
// BenchmarkClientWorkBacklog100kTuned with jobs that log one record each.
func BenchmarkClientWorkBacklog100kTunedLogging(b *testing.B) {
	burnDownWith(b, clientbench.BurnDownOptions{Workers: tunedWorkers, LogLine: true})
}

// burnDownWith works a backlog of 100k jobs with the options o.
func burnDownWith(b *testing.B, o clientbench.BurnDownOptions) {
	n := clientbench.Size(100_000)
	for b.Loop() {
		b.StopTimer()
		d, pool := benchDriver(b)
		backlog(b, pool, n, "pending")
		b.StartTimer()
		clientbench.BurnDownWith(b, d, n, o)
	}
}

// BenchmarkClientWorkBacklog100kObserved is BenchmarkClientWorkBacklog100k
// with middleware and hooks set that do nothing (clientbench.Observed).
func BenchmarkClientWorkBacklog100kObserved(b *testing.B) {
	burnDownWith(b, clientbench.BurnDownOptions{Configure: clientbench.Observed})
}

// BenchmarkClientWorkBacklogWithFinishedRows works a backlog of 100k with
// 1M completed jobs already in the table.
func BenchmarkClientWorkBacklogWithFinishedRows(b *testing.B) {
	n := clientbench.Size(100_000)
	burnDown(b, n, 10*n, 0)
}

// BenchmarkClientEnqueue enqueues one job per call from one goroutine.
func BenchmarkClientEnqueue(b *testing.B) {
	d, _ := benchDriver(b)
	clientbench.Enqueue(b, d, 1)
}

// BenchmarkClientEnqueueParallel enqueues one job per call from 16
// goroutines.
func BenchmarkClientEnqueueParallel(b *testing.B) {
	d, _ := benchDriver(b)
	clientbench.Enqueue(b, d, 16)
}

// BenchmarkClientEnqueueMany enqueues batches of 1,000 jobs.
func BenchmarkClientEnqueueMany(b *testing.B) {
	d, _ := benchDriver(b)
	clientbench.EnqueueMany(b, d, 1000)
}

// BenchmarkClientLatency measures enqueue-to-start latency at a gentle
// rate: one job every 250 ms.
func BenchmarkClientLatency(b *testing.B) {
	samples := 120
	if clientbench.Small() {
		samples = 8
	}
	for b.Loop() {
		d, _ := benchDriver(b)
		clientbench.Latency(b, d, samples, 250*time.Millisecond)
	}
}

// BenchmarkClientWorkBacklog100kWaiting is BenchmarkClientWorkBacklog100k
// while 20,000 jobs wait for a job that never runs, which the release
// pass of the client looks at every poll interval.
func BenchmarkClientWorkBacklog100kWaiting(b *testing.B) {
	n := clientbench.Size(100_000)
	for b.Loop() {
		b.StopTimer()
		d, pool := benchDriver(b)
		backlog(b, pool, n, "pending")
		clientbench.Waiting(b, d, clientbench.Size(20_000))
		b.StartTimer()
		clientbench.BurnDownWith(b, d, n, clientbench.BurnDownOptions{})
	}
}

// BenchmarkClientWorkBacklogPayload200 and BenchmarkClientWorkBacklogEncrypted work 50k jobs of 200-byte
// payloads, enqueued through the client, with tunedWorkers workers (the
// burn_down settings), in clear and encrypted with AES-256-GCM: the
// ratio of the two is what encryption costs.
func BenchmarkClientWorkBacklogPayload200(b *testing.B) { burnDownSealed(b, false) }

// BenchmarkClientWorkBacklogEncrypted is BenchmarkClientWorkBacklogPayload200 with the payloads
// encrypted.
func BenchmarkClientWorkBacklogEncrypted(b *testing.B) { burnDownSealed(b, true) }

func burnDownSealed(b *testing.B, sealed bool) {
	n := clientbench.Size(50_000)
	for b.Loop() {
		b.StopTimer()
		d, _ := benchDriver(b)
		b.StartTimer()
		clientbench.BurnDownSealed(b, d, n, tunedWorkers, sealed)
	}
}
