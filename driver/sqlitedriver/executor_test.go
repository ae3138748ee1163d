package sqlitedriver_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func TestInsertAndGet(t *testing.T) {
	t.Parallel()
	d, _ := newDriver(t, 0)
	ex := d.Executor()
	ctx := t.Context()

	delayed := newJob(func(j *driver.JobInsert) {
		j.Priority = 2
		j.RunAt = base.Add(time.Hour + 789*time.Nanosecond)
	})
	res := insert(t, ex, newJob(), delayed)
	for _, r := range res {
		require.False(t, r.Duplicate)
		got, err := ex.JobGet(ctx, &driver.JobGetParams{ID: r.Job.ID})
		require.NoError(t, err)
		require.Equal(t, r.Job, got)
	}
	require.Equal(t, base.Add(time.Hour), res[1].Job.RunAt, "times keep microseconds")
	require.Equal(t, driver.StatusPending, res[0].Job.Status)
	require.JSONEq(t, `{"to":"a@b.c"}`, string(res[0].Job.Payload))

	_, err := ex.JobGet(ctx, &driver.JobGetParams{ID: "missing"})
	require.ErrorIs(t, err, driver.ErrNotFound)
}

func TestInsertBatchesAndOrder(t *testing.T) {
	t.Parallel()
	d, _ := newDriver(t, 0)
	ex := d.Executor()

	// 700 plain jobs cut into several statements, unique jobs between them.
	var jobs []*driver.JobInsert
	for i := range 700 {
		jobs = append(jobs, newJob(func(j *driver.JobInsert) {
			if i%100 == 0 {
				j.UniqueKey = fmt.Sprintf("k%d", i%200)
			}
		}))
	}
	res := insert(t, ex, jobs...)
	for i, r := range res {
		if i%100 == 0 && i >= 200 {
			require.True(t, r.Duplicate, "job %d", i)
			require.Equal(t, jobs[i%200].ID, r.Job.ID)
			continue
		}
		require.False(t, r.Duplicate, "job %d", i)
		require.Equal(t, jobs[i].ID, r.Job.ID)
	}
	require.Len(t, claim(t, ex, "c", 1000), 700-5)
}

// TestInsertMixedBatch inserts groups of jobs sharing columns among jobs
// that share nothing, and checks every stored row.
func TestInsertMixedBatch(t *testing.T) {
	t.Parallel()
	d, _ := newDriver(t, 0)
	ex := d.Executor()

	var jobs []*driver.JobInsert
	for i := range 300 {
		jobs = append(jobs, newJob(func(j *driver.JobInsert) {
			switch {
			case i%3 == 0: // a large group
			case i%7 == 0: // a smaller group
				j.Topic, j.Priority = "sms", 3
			default: // each its own
				j.Payload = []byte(fmt.Sprintf(`{"n":%d}`, i))
				j.RunAt = base.Add(time.Duration(i) * time.Microsecond)
				j.MaxRetries = i % 5
			}
			if i%50 == 0 {
				j.Payload = nil
			}
		}))
	}
	res := insert(t, ex, jobs...)
	for i, r := range res {
		require.Equal(t, jobs[i].ID, r.Job.ID)
		require.Equal(t, r.Job, get(t, ex, jobs[i].ID), "job %d", i)
	}
}

func TestInsertIsAtomic(t *testing.T) {
	t.Parallel()
	d, _ := newDriver(t, 0)
	ex := d.Executor()

	first := newJob()
	jobs := []*driver.JobInsert{first}
	for range 300 {
		jobs = append(jobs, newJob())
	}
	jobs = append(jobs, newJob(func(j *driver.JobInsert) { j.ID = first.ID }))
	_, err := ex.JobInsertMany(t.Context(), &driver.JobInsertManyParams{Jobs: jobs})
	require.Error(t, err)
	_, err = ex.JobGet(t.Context(), &driver.JobGetParams{ID: first.ID})
	require.ErrorIs(t, err, driver.ErrNotFound)
}

func TestClaimOrderAndFinalize(t *testing.T) {
	t.Parallel()
	d, _ := newDriver(t, 0)
	ex := d.Executor()
	ctx := t.Context()

	low := newJob(func(j *driver.JobInsert) { j.Priority = 5 })
	late := newJob(func(j *driver.JobInsert) { j.RunAt = base.Add(-time.Second) })
	early := newJob(func(j *driver.JobInsert) { j.RunAt = base.Add(-time.Minute) })
	future := newJob(func(j *driver.JobInsert) { j.RunAt = base.Add(time.Second) })
	other := newJob(func(j *driver.JobInsert) { j.Topic = "sms" })
	insert(t, ex, low, late, early, future, other)

	got := claim(t, ex, "c1", 10)
	require.Equal(t, []string{early.ID, late.ID, low.ID}, ids(got))
	for _, j := range got {
		require.Equal(t, driver.StatusProcessing, j.Status)
		require.Equal(t, 1, j.Attempt)
		require.Equal(t, "c1", j.LockedBy)
		require.Equal(t, base.Add(time.Minute), j.LockedUntil)
		require.Equal(t, base, j.AttemptedAt)
	}

	matched, err := ex.JobFinalize(ctx, &driver.JobFinalizeParams{Jobs: []*driver.JobFinalize{
		{ID: early.ID, Attempt: 1, LockedBy: "c1", AttemptedAt: base, Status: driver.StatusCompleted, FinalizedAt: base,
			Result: []byte(`{"ok":true}`)},
		{ID: late.ID, Attempt: 1, LockedBy: "c2", AttemptedAt: base, Status: driver.StatusCompleted, FinalizedAt: base},
		{ID: low.ID, Attempt: 1, LockedBy: "c1", AttemptedAt: base, Status: driver.StatusPending, RunAt: base.Add(time.Hour),
			Snooze: true},
	}})
	require.NoError(t, err)
	require.Equal(t, []bool{true, false, true}, matched)

	done := get(t, ex, early.ID)
	require.Equal(t, driver.StatusCompleted, done.Status)
	require.Equal(t, base, done.FinalizedAt)
	require.JSONEq(t, `{"ok":true}`, string(done.Result))
	require.Empty(t, done.LockedBy)
	require.True(t, done.LockedUntil.IsZero())

	snoozed := get(t, ex, low.ID)
	require.Equal(t, driver.StatusPending, snoozed.Status)
	require.Equal(t, 1, snoozed.Attempt, "a snooze keeps the attempt")
	require.Equal(t, low.MaxRetries+1, snoozed.MaxRetries, "and gives the retry back")
	require.Equal(t, base.Add(time.Hour), snoozed.RunAt)
	require.Equal(t, driver.StatusProcessing, get(t, ex, late.ID).Status)
}

func TestFinalizeKeepsNewestErrors(t *testing.T) {
	t.Parallel()
	d, _ := newDriver(t, 0)
	ex := d.Executor()
	ctx := t.Context()

	job := newJob(func(j *driver.JobInsert) { j.MaxRetries = 100 })
	insert(t, ex, job)
	total := driver.MaxErrorsKept + 5
	for n := 1; n <= total; n++ {
		c := claim(t, ex, "c", 1)
		require.Len(t, c, 1)
		require.Equal(t, n, c[0].Attempt)
		matched, err := ex.JobFinalize(ctx, &driver.JobFinalizeParams{Jobs: []*driver.JobFinalize{{
			ID: job.ID, Attempt: n, LockedBy: "c", AttemptedAt: c[0].AttemptedAt, Status: driver.StatusPending, RunAt: base,
			Error: &driver.AttemptError{Attempt: n, At: base, Error: fmt.Sprintf("boom %d", n), Trace: "stack"},
		}}})
		require.NoError(t, err)
		require.Equal(t, []bool{true}, matched)
		got := get(t, ex, job.ID)
		require.Len(t, got.Errors, min(n, driver.MaxErrorsKept))
		require.Equal(t, n, got.Errors[len(got.Errors)-1].Attempt)
	}
	got := get(t, ex, job.ID)
	require.Equal(t, total-driver.MaxErrorsKept+1, got.Errors[0].Attempt, "oldest dropped first")
	require.Equal(t, driver.AttemptError{Attempt: total, At: base, Error: fmt.Sprintf("boom %d", total), Trace: "stack"},
		got.Errors[len(got.Errors)-1])
}

func TestRescueHeartbeat(t *testing.T) {
	t.Parallel()
	d, _ := newDriver(t, 0)
	ex := d.Executor()
	ctx := t.Context()

	retry := newJob()
	dead := newJob(func(j *driver.JobInsert) { j.MaxRetries = 0 })
	kept := newJob()
	insert(t, ex, retry, dead, kept)
	require.Len(t, claim(t, ex, "gone", 2), 2)
	require.Len(t, claim(t, ex, "alive", 1), 1)

	n, err := ex.JobHeartbeat(ctx, &driver.JobHeartbeatParams{ClientID: "alive", LockedUntil: base.Add(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, 1, n)

	now := base.Add(2 * time.Minute)
	rescued, err := ex.JobRescue(ctx, &driver.JobRescueParams{
		Now: now, Limit: 10, Error: driver.AttemptError{Attempt: 99, At: now, Error: "lease expired"},
	})
	require.NoError(t, err)
	require.Equal(t, []string{retry.ID, dead.ID}, ids(rescued))
	require.Equal(t, driver.StatusPending, rescued[0].Status)
	require.Equal(t, now, rescued[0].RunAt)
	require.True(t, rescued[0].FinalizedAt.IsZero())
	require.Equal(t, driver.StatusFailed, rescued[1].Status)
	require.Equal(t, now, rescued[1].FinalizedAt)
	for _, j := range rescued {
		require.Equal(t, []driver.AttemptError{{Attempt: 1, At: now, Error: "lease expired",
			StartedAt: j.AttemptedAt, ClientID: "gone"}}, j.Errors)
		require.Empty(t, j.LockedBy)
		require.Equal(t, j, get(t, ex, j.ID))
	}
	alive := get(t, ex, kept.ID)
	require.Equal(t, driver.StatusProcessing, alive.Status, "the heartbeat kept its lease")
	require.Equal(t, "alive", alive.LockedBy)
}

func TestCancelledContext(t *testing.T) {
	t.Parallel()
	d, db := newDriver(t, 0)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()

	tx, err := db.BeginTx(t.Context(), nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	for _, ex := range []driver.Executor{d.Executor(), d.UnwrapExecutor(tx)} {
		_, err := ex.JobInsertMany(ctx, &driver.JobInsertManyParams{Jobs: []*driver.JobInsert{newJob()}})
		require.ErrorIs(t, err, context.Canceled)
		_, err = ex.JobClaim(ctx, &driver.JobClaimParams{ClientID: "c", Queue: "default", Topics: []string{"email"}, Limit: 1, Now: base})
		require.ErrorIs(t, err, context.Canceled)
		_, err = ex.JobGet(ctx, &driver.JobGetParams{ID: "x"})
		require.ErrorIs(t, err, context.Canceled)
		_, err = ex.JobHeartbeat(ctx, &driver.JobHeartbeatParams{ClientID: "c"})
		require.ErrorIs(t, err, context.Canceled)
	}
}

// TestCancelDuringClaim cancels claims while they run over a large backlog:
// each either returns its jobs or an error matching the context's, and no job
// is left claimed that no caller received.
func TestCancelDuringClaim(t *testing.T) {
	t.Parallel()
	d, db := newDriver(t, 0)
	ex := d.Executor()
	var jobs []*driver.JobInsert
	for range 2000 {
		jobs = append(jobs, newJob())
	}
	insert(t, ex, jobs...)

	received, cancelled := 0, 0
	for delay := time.Duration(0); delay < 20*time.Millisecond; delay += time.Millisecond {
		ctx, cancel := context.WithCancel(t.Context())
		timer := time.AfterFunc(delay, cancel)
		got, err := ex.JobClaim(ctx, &driver.JobClaimParams{ClientID: "c", Queue: "default", Topics: []string{"email"}, Limit: 100, Now: base, LockedUntil: base})
		timer.Stop()
		cancel()
		if err != nil {
			require.ErrorIs(t, err, context.Canceled)
			cancelled++
			continue
		}
		received += len(got)
	}
	var processing int
	require.NoError(t, db.QueryRowContext(t.Context(),
		`SELECT count(*) FROM sluice_jobs WHERE status = 'processing'`).Scan(&processing))
	require.Equal(t, received, processing)
	t.Logf("%d jobs claimed, %d claims cancelled", received, cancelled)
}

func get(tb testing.TB, ex driver.Executor, id string) *driver.JobRow {
	tb.Helper()
	j, err := ex.JobGet(context.Background(), &driver.JobGetParams{ID: id})
	require.NoError(tb, err)
	return j
}

func ids(jobs []*driver.JobRow) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}
