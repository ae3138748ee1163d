package clientbench

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
)

// PaddedArgs are arguments of about 200 bytes encoded.
type PaddedArgs struct {
	N   int    `json:"n"`
	Pad string `json:"pad"`
}

// Topic names the padded benchmark jobs.
func (PaddedArgs) Topic() string { return "bench_padded" }

// pad makes PaddedArgs about 200 bytes long encoded.
var pad = strings.Repeat("x", 180)

// BurnDownSealed enqueues n jobs of 200-byte payloads through a client
// that encrypts them when sealed is true (with AES-256-GCM), then works
// them with workers workers in the default queue (0: the default
// Config's) and reports jobs/s and the process's CPU time per job (see
// BurnDownWith): the same burn-down with and without
// encryption measures what encryption costs. Only the burn-down is
// timed.
func BurnDownSealed[TTx any](b *testing.B, d driver.Driver[TTx], n, workers int, sealed bool) {
	b.Helper()
	var done atomic.Int64
	finished := make(chan struct{})
	configure := func(cfg *sluice.Config) {
		cfg.Workers = sluice.NewWorkers()
		sluice.AddWorker(cfg.Workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[PaddedArgs]) error {
			if done.Add(1) == int64(n) {
				close(finished)
			}
			return nil
		}))
		if sealed {
			cfg.Encryption = sluice.Encryption{
				Keys:   []sluice.EncryptionKey{{ID: "bench", Key: bytes.Repeat([]byte{1}, 32)}},
				Topics: []string{PaddedArgs{}.Topic()},
			}
		}
	}
	c := clientWith(b, d, nil, workers, configure)
	b.StopTimer()
	const batch = 1000
	for first := 0; first < n; first += batch {
		params := make([]sluice.EnqueueParams, min(batch, n-first))
		for i := range params {
			params[i] = sluice.EnqueueParams{Args: PaddedArgs{N: first + i, Pad: pad}}
		}
		if _, err := c.EnqueueMany(context.Background(), params); err != nil {
			b.Fatal(err)
		}
	}
	b.StartTimer()
	cpu0 := cpuTime()
	elapsed := workAll(b, c, finished)
	b.ReportMetric(float64(n)/elapsed.Seconds(), "jobs/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(n), "cpu_us/job")
}
