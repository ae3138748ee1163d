package clientbench

import (
	"context"
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
// noise moves less than either figure.
func Versus[TTx any](b *testing.B, fresh Fresh[TTx], n, reps int, o BurnDownOptions) {
	b.Helper()
	var plain, variant []float64
	for range reps {
		for _, v := range []bool{false, true} {
			d, cleanup := fresh(v)
			rate := burnDown(b, d, n, o)
			cleanup()
			if v {
				variant = append(variant, rate)
			} else {
				plain = append(plain, rate)
			}
		}
	}
	b.ReportMetric(median(plain), "plain_jobs/s")
	b.ReportMetric(median(variant), "variant_jobs/s")
	b.ReportMetric(median(variant)/median(plain), "variant/plain")
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
