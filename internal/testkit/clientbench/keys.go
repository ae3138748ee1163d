package clientbench

import (
	"context"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
)

// Fresh returns a driver over a new table filled for one run, and what
// cleans it up; variant says whether the run is the variant or the plain
// run a benchmark compares it with.
type Fresh[TTx any] func(variant bool) (driver.Driver[TTx], func())

// Versus works the same backlog of n jobs reps times each as the plain run
// and as the variant, alternately and each on a fresh table, and reports
// the median jobs/s of each and the variant's share of the plain
// (variant/plain): a ratio measured side by side, which a shared machine's
// noise moves less than either figure. It also reports the median CPU time
// of the process per job of each (which on SQLite includes the database's
// work and on Postgres does not include the server's), and logs each
// pair's figures. Each run carries the profiler label versus=plain or
// versus=variant, so that a CPU profile tells their costs apart
// (go tool pprof -tagfocus versus=variant).
func Versus[TTx any](b *testing.B, fresh Fresh[TTx], n, reps int, o BurnDownOptions) {
	b.Helper()
	versus(b, fresh, n, reps, "variant", func(d driver.Driver[TTx], _ bool) float64 { return burnDown(b, d, n, o) })
}

// versus runs run on a fresh driver reps times each as the plain run and
// as the variant, alternately, and reports and logs what Versus says,
// naming the variant's figures after name.
func versus[TTx any](b *testing.B, fresh Fresh[TTx], n, reps int, name string,
	run func(d driver.Driver[TTx], variant bool) float64) {
	b.Helper()
	var rates, cpus [2][]float64 // [0] plain, [1] the variant
	for range reps {
		for i, v := range []bool{false, true} {
			d, cleanup := fresh(v)
			labeled(v, func() {
				cpu0 := cpuTime()
				rates[i] = append(rates[i], run(d, v))
				cpus[i] = append(cpus[i], float64((cpuTime()-cpu0).Microseconds())/float64(n))
			})
			cleanup()
		}
		last := len(rates[0]) - 1
		b.Logf("plain %.0f jobs/s %.1f cpu_us/job, %s %.0f jobs/s %.1f cpu_us/job: %.3f", rates[0][last], cpus[0][last],
			name, rates[1][last], cpus[1][last], rates[1][last]/rates[0][last])
	}
	b.ReportMetric(median(rates[0]), "plain_jobs/s")
	b.ReportMetric(median(rates[1]), name+"_jobs/s")
	b.ReportMetric(median(rates[1])/median(rates[0]), name+"/plain")
	b.ReportMetric(median(cpus[0]), "plain_cpu_us/job")
	b.ReportMetric(median(cpus[1]), name+"_cpu_us/job")
}

// labeled runs f with the profiler label versus=variant when variant is
// true, else versus=plain; goroutines f starts inherit it.
func labeled(variant bool, f func()) {
	name := "plain"
	if variant {
		name = "variant"
	}
	pprof.Do(context.Background(), pprof.Labels("versus", name), func(context.Context) { f() })
}

// SetKeyLimits stores limits for scope in d's table through a client of
// its own, as an operator does before starting the workers.
func SetKeyLimits[TTx any](b *testing.B, d driver.Driver[TTx], scope sluice.Scope, l sluice.KeyLimits) {
	b.Helper()
	c, err := sluice.NewClient(d, &sluice.Config{Logger: discard, SkipMigrations: true})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.SetKeyLimits(context.Background(), scope, l); err != nil {
		b.Fatal(err)
	}
}

// FairShare works a backlog of big jobs of key "big" followed by small jobs
// of key "small", all due from the start, once in a fair queue and once
// in FIFO order (fresh's variant is the fair run), and reports, for each,
// the small key's wait until its jobs start (p50 and p99, from the start
// of the burn-down) and how much of the big backlog was done when the last
// small job finished.
func FairShare[TTx any](b *testing.B, fresh Fresh[TTx], big, small, workers int) {
	b.Helper()
	for _, fair := range []bool{false, true} {
		name := "fifo"
		if fair {
			name = "fair"
		}
		d, cleanup := fresh(fair)
		var (
			mu      sync.Mutex
			waits   []time.Duration
			bigDone atomic.Int64
			atLast  int64
			done    atomic.Int64
		)
		finished := make(chan struct{})
		var start time.Time
		c := client(b, d, func(ctx context.Context, job *sluice.Job[Args]) error {
			if job.Key == "small" {
				mu.Lock()
				waits = append(waits, time.Since(start))
				if len(waits) == small {
					atLast = bigDone.Load()
				}
				mu.Unlock()
			} else {
				bigDone.Add(1)
			}
			if done.Add(1) == int64(big+small) {
				close(finished)
			}
			return nil
		}, workers)
		start = time.Now()
		if err := c.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		<-finished
		if err := c.Stop(context.Background()); err != nil {
			b.Fatal(err)
		}
		cleanup()
		slices.Sort(waits)
		b.ReportMetric(ms(waits[len(waits)/2]), name+"_small_wait_p50_ms")
		b.ReportMetric(ms(waits[len(waits)*99/100]), name+"_small_wait_p99_ms")
		b.ReportMetric(100*float64(atLast)/float64(big), name+"_big_done_pct_at_small_last")
	}
}
