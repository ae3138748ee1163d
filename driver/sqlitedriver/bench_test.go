package sqlitedriver_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/drivertest"
	"github.com/sluicehq/sluice/internal/testkit/clientbench"
)

// BenchmarkInsertSingle inserts one job per call through the driver's
// handle, as Enqueue does.
func BenchmarkInsertSingle(b *testing.B) {
	d, _ := newDriver(b, 0)
	ex := d.Executor()
	ctx := context.Background()
	jobs := make([]*driver.JobInsert, b.N)
	for i := range jobs {
		jobs[i] = newJob()
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		_, err := ex.JobInsertMany(ctx, &driver.JobInsertManyParams{Jobs: jobs[i : i+1]})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
}

// BenchmarkInsertSingleBareSQL is the floor under BenchmarkInsertSingle: the
// same one-row INSERT into the same table as a prepared statement through
// database/sql, without the driver.
func BenchmarkInsertSingleBareSQL(b *testing.B) {
	_, db := newDriver(b, 0)
	ctx := context.Background()
	st, err := db.PrepareContext(ctx, `INSERT INTO sluice_jobs
	(id, topic, queue, priority, payload, max_retries, run_at, created_at, status, attempt)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0)`)
	require.NoError(b, err)
	defer st.Close()
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = newID()
	}
	at := base.UnixMicro()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		if _, err := st.ExecContext(ctx, ids[i], "email", "default", int64(0), `{"to":"a@b.c"}`, int64(3), at, at); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
}

// BenchmarkInsertBatch inserts 1,000 jobs per call through the driver's
// handle.
func BenchmarkInsertBatch(b *testing.B) {
	const batch = 1000
	d, _ := newDriver(b, 0)
	ex := d.Executor()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	var elapsed time.Duration
	for range b.N {
		b.StopTimer()
		jobs := make([]*driver.JobInsert, batch)
		for i := range jobs {
			jobs[i] = newJob()
		}
		b.StartTimer()
		start := time.Now()
		if _, err := ex.JobInsertMany(ctx, &driver.JobInsertManyParams{Jobs: jobs}); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(start)
	}
	b.ReportMetric(float64(b.N*batch)/elapsed.Seconds(), "rows/s")
}

// BenchmarkClaimFinalize works off a backlog of 100,000 jobs by claiming ten
// at a time and completing them in one call, one client on the driver's
// handle. One operation drains the whole backlog.
func BenchmarkClaimFinalize(b *testing.B) {
	const batch = 10
	backlog := clientbench.Size(100_000)
	d, _ := newDriver(b, 0)
	ex := d.Executor()
	ctx := context.Background()
	var elapsed time.Duration
	for range b.N {
		b.StopTimer()
		for i := 0; i < backlog; i += 1000 {
			jobs := make([]*driver.JobInsert, 1000)
			for k := range jobs {
				jobs[k] = newJob()
			}
			_, err := ex.JobInsertMany(ctx, &driver.JobInsertManyParams{Jobs: jobs})
			require.NoError(b, err)
		}
		b.StartTimer()
		start := time.Now()
		done := 0
		for done < backlog {
			jobs, err := ex.JobClaim(ctx, &driver.JobClaimParams{
				ClientID: "bench", Queue: "default", Topics: []string{"email"},
				Limit: batch, Now: base, LockedUntil: base.Add(time.Minute),
			})
			if err != nil {
				b.Fatal(err)
			}
			fin := make([]*driver.JobFinalize, len(jobs))
			for i, j := range jobs {
				fin[i] = &driver.JobFinalize{ID: j.ID, Attempt: j.Attempt, LockedBy: "bench", AttemptedAt: j.AttemptedAt,
					Status: driver.StatusCompleted, FinalizedAt: base}
			}
			if _, err := ex.JobFinalize(ctx, &driver.JobFinalizeParams{Jobs: fin}); err != nil {
				b.Fatal(err)
			}
			done += len(jobs)
		}
		elapsed += time.Since(start)
	}
	b.ReportMetric(float64(b.N*backlog)/elapsed.Seconds(), "jobs/s")
}

// BenchmarkInsertSingleTx inserts one job per transaction through
// UnwrapExecutor, as EnqueueTx does, committing each.
func BenchmarkInsertSingleTx(b *testing.B) {
	d, db := newDriver(b, 0)
	ctx := context.Background()
	jobs := make([]*driver.JobInsert, b.N)
	for i := range jobs {
		jobs[i] = newJob()
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := d.UnwrapExecutor(tx).JobInsertMany(ctx, &driver.JobInsertManyParams{Jobs: jobs[i : i+1]}); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
}

// BenchmarkClaimFlowCost measures what flow control costs a claim (see
// drivertest.BenchmarkClaimFlowCost).
func BenchmarkClaimFlowCost(b *testing.B) {
	d, _ := newDriver(b, 0)
	ex := d.Executor()
	drivertest.BenchmarkClaimFlowCost(b, ex, "email", func() time.Time { return base }, func() {
		jobs := make([]*driver.JobInsert, 1000)
		for k := range jobs {
			jobs[k] = newJob()
		}
		_, err := ex.JobInsertMany(b.Context(), &driver.JobInsertManyParams{Jobs: jobs})
		require.NoError(b, err)
	})
}
