package sqlitedriver_test

import (
	"bufio"
	"context"
	"database/sql"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// Client-level benchmarks with the default Config: what a user gets
// without tuning. Figures are recorded in docs/performance.md.

type benchArgs struct {
	N int `json:"n"`
}

func (benchArgs) Topic() string { return "bench" }

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

func benchDB(b *testing.B) *sql.DB {
	b.Helper()
	db, err := sqlitedriver.Open(filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

func benchClient(b *testing.B, db *sql.DB, work func(context.Context, *sluice.Job[benchArgs]) error) *sluice.Client[*sql.Tx] {
	b.Helper()
	cfg := &sluice.Config{Logger: discard}
	if work != nil {
		cfg.Workers = sluice.NewWorkers()
		sluice.AddWorker(cfg.Workers, sluice.WorkFunc(work))
	}
	c, err := sluice.NewClient(sqlitedriver.New(db), cfg)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// backlog inserts n pending jobs with a single SQL statement, so the Go
// heap stays out of the measurement.
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

// burnDown works n pending jobs with a worker that takes d (0 for no-op)
// and reports jobs/s.
func burnDown(b *testing.B, db *sql.DB, n int, d time.Duration) {
	b.Helper()
	var done atomic.Int64
	finished := make(chan struct{})
	c := benchClient(b, db, func(context.Context, *sluice.Job[benchArgs]) error {
		if d > 0 {
			time.Sleep(d)
		}
		if done.Add(1) == int64(n) {
			close(finished)
		}
		return nil
	})
	start := time.Now()
	if err := c.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	<-finished
	elapsed := time.Since(start)
	if err := c.Stop(context.Background()); err != nil {
		b.Fatal(err)
	}
	var left int
	if err := db.QueryRow(`SELECT count(*) FROM sluice_jobs WHERE status <> 'completed' AND topic = 'bench'`).Scan(&left); err != nil {
		b.Fatal(err)
	}
	if left != 0 {
		b.Fatalf("%d jobs not completed", left)
	}
	b.ReportMetric(float64(n)/elapsed.Seconds(), "jobs/s")
}

// BenchmarkWorkBacklog works a 100k backlog of no-op jobs with the default
// Config (10 workers).
func BenchmarkWorkBacklog(b *testing.B) {
	n := benchSize(b, 100_000)
	for b.Loop() {
		b.StopTimer()
		db := benchDB(b)
		benchClient(b, db, nil)
		backlog(b, db, n, "pending")
		b.StartTimer()
		burnDown(b, db, n, 0)
	}
}

// BenchmarkWorkBacklogOneMillisecond works a backlog of jobs that take 1 ms
// each: with the default 10 workers, at most 10,000 jobs/s.
func BenchmarkWorkBacklogOneMillisecond(b *testing.B) {
	n := benchSize(b, 20_000)
	for b.Loop() {
		b.StopTimer()
		db := benchDB(b)
		benchClient(b, db, nil)
		backlog(b, db, n, "pending")
		b.StartTimer()
		burnDown(b, db, n, time.Millisecond)
	}
}

// BenchmarkWorkBacklogWithFinishedRows is BenchmarkWorkBacklog with 1M
// completed jobs already in the table.
func BenchmarkWorkBacklogWithFinishedRows(b *testing.B) {
	n := benchSize(b, 100_000)
	for b.Loop() {
		b.StopTimer()
		db := benchDB(b)
		benchClient(b, db, nil)
		backlog(b, db, 10*n, "completed")
		backlog(b, db, n, "pending")
		b.StartTimer()
		burnDown(b, db, n, 0)
	}
}

// BenchmarkEnqueue enqueues one job per call from one goroutine.
func BenchmarkEnqueue(b *testing.B) {
	db := benchDB(b)
	c := benchClient(b, db, nil)
	ctx := context.Background()
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		if _, err := c.Enqueue(ctx, benchArgs{N: i}, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
}

// BenchmarkEnqueueParallel enqueues one job per call from 16 goroutines;
// the driver's group commit writes concurrent enqueues together.
func BenchmarkEnqueueParallel(b *testing.B) {
	db := benchDB(b)
	c := benchClient(b, db, nil)
	ctx := context.Background()
	b.SetParallelism(8) // 8 × GOMAXPROCS (2) = 16 goroutines
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			if _, err := c.Enqueue(ctx, benchArgs{N: i}, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
}

// BenchmarkEnqueueMany enqueues batches of 1,000 jobs.
func BenchmarkEnqueueMany(b *testing.B) {
	db := benchDB(b)
	c := benchClient(b, db, nil)
	ctx := context.Background()
	params := make([]sluice.EnqueueParams, 1000)
	for i := range params {
		params[i] = sluice.EnqueueParams{Args: benchArgs{N: i}}
	}
	start := time.Now()
	for b.Loop() {
		if _, err := c.EnqueueMany(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(params))/time.Since(start).Seconds(), "rows/s")
}

// BenchmarkLatency measures enqueue-to-start latency in one process at a
// gentle rate: one job every 5 ms.
func BenchmarkLatency(b *testing.B) {
	const samples = 400
	for b.Loop() {
		db := benchDB(b)
		started := make(chan time.Time, 1)
		c := benchClient(b, db, func(context.Context, *sluice.Job[benchArgs]) error {
			started <- time.Now()
			return nil
		})
		ctx := context.Background()
		if err := c.Start(ctx); err != nil {
			b.Fatal(err)
		}
		lat := make([]time.Duration, 0, samples)
		for i := range samples {
			t0 := time.Now()
			if _, err := c.Enqueue(ctx, benchArgs{N: i}, nil); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, (<-started).Sub(t0))
			time.Sleep(5 * time.Millisecond)
		}
		if err := c.Stop(ctx); err != nil {
			b.Fatal(err)
		}
		slices.Sort(lat)
		b.ReportMetric(ms(lat[len(lat)/2]), "p50_ms")
		b.ReportMetric(ms(lat[len(lat)*99/100]), "p99_ms")
	}
}

// BenchmarkMemoryWithMillionPending works through part of a backlog of 1M
// pending jobs and reports the process's peak resident memory.
func BenchmarkMemoryWithMillionPending(b *testing.B) {
	pending, work := benchSize(b, 1_000_000), int64(benchSize(b, 100_000))
	for b.Loop() {
		b.StopTimer()
		db := benchDB(b)
		benchClient(b, db, nil)
		backlog(b, db, pending, "pending")
		b.StartTimer()
		var peak atomic.Int64
		stop := sampleRSS(&peak)
		var done atomic.Int64
		finished := make(chan struct{})
		c := benchClient(b, db, func(context.Context, *sluice.Job[benchArgs]) error {
			if done.Add(1) == work {
				close(finished)
			}
			return nil
		})
		if err := c.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		<-finished
		if err := c.Stop(context.Background()); err != nil {
			b.Fatal(err)
		}
		stop()
		b.ReportMetric(float64(peak.Load())/(1<<20), "rss_MiB")
	}
}

// sampleRSS records the peak resident set size every 10 ms until stopped.
func sampleRSS(peak *atomic.Int64) (stop func()) {
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		ticker := time.NewTicker(10 * time.Millisecond)
		defer ticker.Stop()
		for {
			if rss := readRSS(); rss > peak.Load() {
				peak.Store(rss)
			}
			select {
			case <-quit:
				return
			case <-ticker.C:
			}
		}
	})
	return func() { close(quit); wg.Wait() }
}

// readRSS returns the process's resident set size in bytes (Linux).
func readRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// benchSize returns n, or a small number when SLUICE_BENCH_SMALL is set
// (CI runs every benchmark once, small, to keep them working).
func benchSize(b *testing.B, n int) int {
	b.Helper()
	if os.Getenv("SLUICE_BENCH_SMALL") != "" {
		return max(n/100, 100)
	}
	return n
}
