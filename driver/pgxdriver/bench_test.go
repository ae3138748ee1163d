package pgxdriver_test

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/drivertest"
)

// reportJobs reports n jobs over the benchmark's time as jobs/s.
func reportJobs(b *testing.B, n int) {
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkInsertSingle inserts one job per call, through the pool.
func BenchmarkInsertSingle(b *testing.B) {
	d, _, _ := newDriver(b)
	ctx := b.Context()
	ex := d.Executor()
	n := 0
	for b.Loop() {
		_, err := ex.JobInsertMany(ctx, params(jobs(1, "default")))
		require.NoError(b, err)
		n++
	}
	reportJobs(b, n)
}

// BenchmarkInsertSingleParallel inserts one job per call from 16
// goroutines, through the pool.
func BenchmarkInsertSingleParallel(b *testing.B) {
	d, _, _ := newDriver(b)
	ctx := b.Context()
	ex := d.Executor()
	var n atomic.Int64
	b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, err := ex.JobInsertMany(ctx, params(jobs(1, "default")))
			if err != nil {
				b.Error(err)
				return
			}
			n.Add(1)
		}
	})
	reportJobs(b, int(n.Load()))
}

// BenchmarkInsertBatch inserts 1,000 jobs per call (COPY), through the
// pool.
func BenchmarkInsertBatch(b *testing.B) {
	d, _, _ := newDriver(b)
	ctx := b.Context()
	ex := d.Executor()
	const batch = 1000
	n := 0
	for b.Loop() {
		b.StopTimer()
		js := jobs(batch, "default")
		b.StartTimer()
		_, err := ex.JobInsertMany(ctx, params(js))
		require.NoError(b, err)
		n += batch
	}
	reportJobs(b, n)
}

// BenchmarkClaimFinalize claims 10 jobs and completes them in one batch,
// in a loop over a backlog.
func BenchmarkClaimFinalize(b *testing.B) {
	d, _, _ := newDriver(b)
	ctx := b.Context()
	ex := d.Executor()
	const per = 10
	for range 20 {
		_, err := ex.JobInsertMany(ctx, params(jobs(1000, "default")))
		require.NoError(b, err)
	}
	n := 0
	for b.Loop() {
		now := time.Now()
		rows, err := ex.JobClaim(ctx, &driver.JobClaimParams{
			ClientID: "bench", Queue: "default", Topics: []string{"work"},
			Limit: per, Now: now, LockedUntil: now.Add(time.Minute),
		})
		require.NoError(b, err)
		if len(rows) == 0 {
			b.StopTimer()
			_, err := ex.JobInsertMany(ctx, params(jobs(1000, "default")))
			require.NoError(b, err)
			b.StartTimer()
			continue
		}
		items := make([]*driver.JobFinalize, len(rows))
		for i, r := range rows {
			items[i] = &driver.JobFinalize{ID: r.ID, Attempt: r.Attempt, LockedBy: r.LockedBy, AttemptedAt: r.AttemptedAt,
				Status: driver.StatusCompleted, FinalizedAt: now}
		}
		_, err = ex.JobFinalize(ctx, &driver.JobFinalizeParams{Jobs: items})
		require.NoError(b, err)
		n += len(rows)
	}
	reportJobs(b, n)
}

// BenchmarkClaimFlowCost measures what flow control costs a claim (see
// drivertest.BenchmarkClaimFlowCost).
func BenchmarkClaimFlowCost(b *testing.B) {
	d, _, _ := newDriver(b)
	ex := d.Executor()
	drivertest.BenchmarkClaimFlowCost(b, ex, "work", time.Now, func() {
		_, err := ex.JobInsertMany(b.Context(), params(jobs(2000, "default")))
		require.NoError(b, err)
	})
}
