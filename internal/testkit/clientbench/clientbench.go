// Package clientbench holds the client-level benchmarks every driver runs,
// so that their figures measure the same thing: a backlog worked down,
// enqueues one at a time and in batches, enqueue-to-start latency, and the
// process's memory.
package clientbench

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
)

// Args are the benchmark jobs' arguments.
type Args struct {
	N int `json:"n"`
}

// Topic names the benchmark jobs.
func (Args) Topic() string { return "bench" }

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// Client returns a client over d with the default Config; work, when not
// nil, becomes its worker.
func Client[TTx any](b *testing.B, d driver.Driver[TTx], work func(context.Context, *sluice.Job[Args]) error) *sluice.Client[TTx] {
	b.Helper()
	return client(b, d, work, 0)
}

// client is Client with workers workers in the default queue (0: the
// default Config's).
func client[TTx any](b *testing.B, d driver.Driver[TTx], work func(context.Context, *sluice.Job[Args]) error, workers int) *sluice.Client[TTx] {
	b.Helper()
	return clientWith(b, d, work, workers, nil)
}

// clientWith is client with the Config changed by configure, if not nil.
func clientWith[TTx any](b *testing.B, d driver.Driver[TTx], work func(context.Context, *sluice.Job[Args]) error, workers int,
	configure func(*sluice.Config)) *sluice.Client[TTx] {
	b.Helper()
	cfg := &sluice.Config{Logger: discard, ChangeFeed: sluice.ChangeFeedConfig{Linger: -1}}
	if workers > 0 {
		cfg.Queues = map[string]sluice.QueueConfig{sluice.QueueDefault: {MaxWorkers: workers}}
	}
	if work != nil {
		cfg.Workers = sluice.NewWorkers()
		sluice.AddWorker(cfg.Workers, sluice.WorkFunc(work))
	}
	if configure != nil {
		configure(cfg)
	}
	c, err := sluice.NewClient(d, cfg)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BurnDown works n pending jobs already in d's table with a worker that
// takes jobTime (0 for no-op) and workers workers in the default queue (0:
// the default Config's), reports jobs/s, and returns when all are done.
func BurnDown[TTx any](b *testing.B, d driver.Driver[TTx], n int, jobTime time.Duration, workers int) {
	b.Helper()
	BurnDownWith(b, d, n, BurnDownOptions{JobTime: jobTime, Workers: workers})
}

// BurnDownOptions vary BurnDownWith.
type BurnDownOptions struct {
	// JobTime is how long each job takes; 0 for no-op jobs.
	JobTime time.Duration
	// Workers is the default queue's worker count; 0 for the default
	// Config's.
	Workers int
	// LogLine makes every job log one record through sluice.Logger.
	LogLine bool
	// Watched makes a subscriber of the client's change feed read every
	// change while the client works.
	Watched bool
	// Configure, when not nil, changes the Config before NewClient.
	Configure func(*sluice.Config)
}

// BurnDownWith is BurnDown with the options o. Besides jobs/s it reports
// the process's CPU time per job (cpu_us/job: user and system time of the
// whole process, which on SQLite includes the database's work and on
// Postgres does not include the server's).
func BurnDownWith[TTx any](b *testing.B, d driver.Driver[TTx], n int, o BurnDownOptions) {
	b.Helper()
	cpu0 := cpuTime()
	b.ReportMetric(burnDown(b, d, n, o), "jobs/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(n), "cpu_us/job")
}

// Observed sets in cfg what a user observing jobs sets, each doing
// nothing: enqueue and work middleware that only call next, and the job
// hooks. With it, a burn-down measures the cost of these features set but
// trivial.
func Observed(cfg *sluice.Config) {
	cfg.EnqueueMiddleware = append(cfg.EnqueueMiddleware, sluice.EnqueueMiddlewareFunc(
		func(ctx context.Context, _ []*sluice.EnqueueJob, next func(context.Context) ([]sluice.EnqueueResult, error)) ([]sluice.EnqueueResult, error) {
			return next(ctx)
		}))
	cfg.WorkMiddleware = append(cfg.WorkMiddleware, sluice.WorkMiddlewareFunc(
		func(ctx context.Context, _ *sluice.JobRow, next func(context.Context) error) error { return next(ctx) }))
	cfg.Hooks.JobStarted = func(context.Context, *sluice.JobRow) {}
	cfg.Hooks.JobFinished = func(context.Context, *sluice.JobRow, error, time.Duration) {}
	cfg.Hooks.JobDone = func(context.Context, *sluice.JobDone) {}
}

// cpuTime returns the user and system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BurnDownRate is BurnDownWith returning the jobs/s instead of reporting
// them, for benchmarks that compare burn-downs run side by side.
func BurnDownRate[TTx any](b *testing.B, d driver.Driver[TTx], n int, o BurnDownOptions) float64 {
	b.Helper()
	return burnDown(b, d, n, o)
}

// burnDown is BurnDownWith returning jobs/s.
func burnDown[TTx any](b *testing.B, d driver.Driver[TTx], n int, o BurnDownOptions) float64 {
	b.Helper()
	var done atomic.Int64
	finished := make(chan struct{})
	c := clientWith(b, d, func(ctx context.Context, job *sluice.Job[Args]) error {
		if o.JobTime > 0 {
			time.Sleep(o.JobTime)
		}
		if o.LogLine {
			sluice.Logger(ctx).Info("worked", "n", job.Args.N)
		}
		if done.Add(1) == int64(n) {
			close(finished)
		}
		return nil
	}, o.Workers, o.Configure)
	if o.Watched {
		sub, err := c.Watch(context.Background(), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer sub.Close()
		go func() {
			for range sub.C { // until Close
			}
		}()
	}
	return float64(n) / workAll(b, c, finished).Seconds()
}

// workAll starts c, waits for finished to close, stops c and returns how
// long the work took from the start.
func workAll[TTx any](b *testing.B, c *sluice.Client[TTx], finished <-chan struct{}) time.Duration {
	b.Helper()
	start := time.Now()
	if err := c.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	<-finished
	elapsed := time.Since(start)
	if err := c.Stop(context.Background()); err != nil {
		b.Fatal(err)
	}
	return elapsed
}

// Enqueue enqueues one job per call, b.N times, from one goroutine or,
// with goroutines > 1, from that many at once, and reports jobs/s.
func Enqueue[TTx any](b *testing.B, d driver.Driver[TTx], goroutines int) {
	c := Client(b, d, nil)
	b.ResetTimer()
	b.ReportMetric(enqueueRate(b, c, goroutines, int64(b.N)), "jobs/s")
}

// enqueueRate enqueues n jobs one per call from goroutines goroutines and
// returns jobs/s.
func enqueueRate[TTx any](b *testing.B, c *sluice.Client[TTx], goroutines int, n int64) float64 {
	ctx := context.Background()
	var next atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for i := next.Add(1); i <= n; i = next.Add(1) {
				if _, err := c.Enqueue(ctx, Args{N: int(i)}, nil); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

// EnqueueMany enqueues batches of size jobs, b.N times, and reports rows/s.
func EnqueueMany[TTx any](b *testing.B, d driver.Driver[TTx], size int) {
	c := Client(b, d, nil)
	ctx := context.Background()
	params := make([]sluice.EnqueueParams, size)
	for i := range params {
		params[i] = sluice.EnqueueParams{Args: Args{N: i}}
	}
	start := time.Now()
	for b.Loop() {
		if _, err := c.EnqueueMany(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*size)/time.Since(start).Seconds(), "rows/s")
}

// Latency enqueues samples jobs one at a time, gap apart, and reports the
// median and 99th percentile of the time from the start of Enqueue to the
// start of the worker.
func Latency[TTx any](b *testing.B, d driver.Driver[TTx], samples int, gap time.Duration) {
	started := make(chan time.Time, 1)
	c := Client(b, d, func(context.Context, *sluice.Job[Args]) error {
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
		if _, err := c.Enqueue(ctx, Args{N: i}, nil); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, (<-started).Sub(t0))
		time.Sleep(gap)
	}
	if err := c.Stop(ctx); err != nil {
		b.Fatal(err)
	}
	slices.Sort(lat)
	b.ReportMetric(ms(lat[len(lat)/2]), "p50_ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99_ms")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// PeakRSS samples the process's resident set size every 10 ms until stop
// is called, which returns the peak in MiB (Linux).
func PeakRSS() (stop func() float64) {
	var peak atomic.Int64
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
	return func() float64 {
		close(quit)
		wg.Wait()
		return float64(peak.Load()) / (1 << 20)
	}
}

// readRSS returns the process's resident set size in bytes.
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

// Small reports whether SLUICE_BENCH_SMALL is set: CI runs every benchmark
// once, small, to keep them working.
func Small() bool { return os.Getenv("SLUICE_BENCH_SMALL") != "" }

// Size returns n, or a hundredth of it (at least 100) when Small.
func Size(n int) int {
	if Small() {
		return max(n/100, 100)
	}
	return n
}

// blocker is the job Waiting's jobs wait for: no client of these
// benchmarks has a worker for its topic, so it never runs.
type blocker struct{}

// Topic names the blocker.
func (blocker) Topic() string { return "bench_blocker" }

// Waiting enqueues into d a job no benchmark client works and n jobs of
// Args waiting for it, which therefore wait for as long as the benchmark
// runs: what a release pass looks at every tick.
func Waiting[TTx any](b *testing.B, d driver.Driver[TTx], n int) {
	b.Helper()
	c := Client(b, d, nil)
	ctx := context.Background()
	res, err := c.Enqueue(ctx, blocker{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	params := make([]sluice.EnqueueParams, 1000)
	for i := 0; i < n; i += len(params) {
		for k := range params {
			params[k] = sluice.EnqueueParams{Args: Args{N: -1 - i - k},
				Options: &sluice.EnqueueOptions{DependsOn: []string{res.Job.ID}}}
		}
		if _, err := c.EnqueueMany(ctx, params[:min(len(params), n-i)]); err != nil {
			b.Fatal(err)
		}
	}
}
