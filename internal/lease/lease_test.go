package lease_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/lease"
	"github.com/sluicehq/sluice/internal/testkit/exectest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// clock is a clock the test moves by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// sameTime fails t unless got is the instant want.
func sameTime(t *testing.T, want, got time.Time, msgAndArgs ...any) {
	t.Helper()
	require.WithinDuration(t, want, got, 0, msgAndArgs...)
}

// held is the held function a heartbeat asks, counting its calls.
type held struct {
	ids   []string
	calls atomic.Int64
}

func (h *held) get() []string {
	h.calls.Add(1)
	return h.ids
}

// beats waits for n more calls of h.get, that is n more beats.
func (h *held) beats(t *testing.T, n int64) {
	t.Helper()
	want := h.calls.Load() + n
	require.Eventually(t, func() bool { return h.calls.Load() >= want }, 10*time.Second, time.Millisecond)
}

// leaseOf returns the lease of job id as stored.
func leaseOf(db *exectest.DB, id string) time.Time { return db.Get(id).LockedUntil }

func TestHeartbeatExtendsTheHeldJobsOfItsClientOnly(t *testing.T) {
	t.Parallel()
	exectest.Each(t, func(t *testing.T, db *exectest.DB) {
		base := exectest.Now()
		mine := db.Claim(3, "c1", base, base.Add(time.Minute), 3)
		theirs := db.Claim(1, "c2", base, base.Add(time.Minute), 3)
		// mine[2] is the client's in the database's eyes only (its outcome
		// given up on): held leaves it out. theirs[0] is another client's.
		h := &held{ids: []string{mine[0].ID, mine[1].ID, theirs[0].ID}}
		clk := &clock{now: base.Add(10 * time.Second)}
		logger, _ := exectest.Logger()
		exectest.Background(t, func(ctx context.Context) {
			lease.Heartbeat(ctx, db.Exec, "c1", h.get, time.Millisecond, time.Minute, clk.Now, logger)
		})

		require.Eventually(t, func() bool {
			return leaseOf(db, mine[0].ID).Equal(base.Add(70 * time.Second))
		}, 10*time.Second, time.Millisecond)
		sameTime(t, base.Add(70*time.Second), leaseOf(db, mine[1].ID))
		sameTime(t, base.Add(time.Minute), leaseOf(db, mine[2].ID), "a job held returns not is left to expire")
		sameTime(t, base.Add(time.Minute), leaseOf(db, theirs[0].ID), "another client's job is not extended")

		clk.Set(base.Add(20 * time.Second))
		require.Eventually(t, func() bool {
			return leaseOf(db, mine[0].ID).Equal(base.Add(80 * time.Second))
		}, 10*time.Second, time.Millisecond, "each beat extends the lease from the clock's now")
		for _, row := range append(mine, theirs...) {
			require.Equal(t, driver.StatusProcessing, db.Get(row.ID).Status)
		}
	})
}

func TestHeartbeatWritesNothingWhenNoJobIsHeld(t *testing.T) {
	t.Parallel()
	exectest.Each(t, func(t *testing.T, db *exectest.DB) {
		base := exectest.Now()
		rows := db.Claim(2, "c1", base, base.Add(time.Minute), 3)
		h := &held{} // nil: were it passed on, every job of c1 would be extended
		logger, logs := exectest.Logger()
		exectest.Background(t, func(ctx context.Context) {
			lease.Heartbeat(ctx, db.Exec, "c1", h.get, time.Millisecond, time.Hour, exectest.Now, logger)
		})
		h.beats(t, 5)
		for _, row := range rows {
			sameTime(t, base.Add(time.Minute), leaseOf(db, row.ID))
		}
		require.Zero(t, logs.Count("heartbeat failed"))
	})
}

func TestHeartbeatKeepsBeatingAfterAFailure(t *testing.T) {
	t.Parallel()
	exectest.Each(t, func(t *testing.T, db *exectest.DB) {
		base := exectest.Now()
		rows := db.Claim(1, "c1", base, base.Add(time.Minute), 3)
		restore := db.RefuseUpdates()
		h := &held{ids: []string{rows[0].ID}}
		clk := &clock{now: base.Add(time.Second)}
		logger, logs := exectest.Logger()
		exectest.Background(t, func(ctx context.Context) {
			lease.Heartbeat(ctx, db.Exec, "c1", h.get, time.Millisecond, time.Minute, clk.Now, logger)
		})
		require.Eventually(t, func() bool {
			return logs.Count("level=WARN", "heartbeat failed; leases may expire") >= 2
		}, 10*time.Second, time.Millisecond)
		sameTime(t, base.Add(time.Minute), leaseOf(db, rows[0].ID))

		restore()
		require.Eventually(t, func() bool {
			return leaseOf(db, rows[0].ID).Equal(base.Add(61 * time.Second))
		}, 10*time.Second, time.Millisecond)
	})
}

func TestHeartbeatLogsNothingWhenStopped(t *testing.T) {
	t.Parallel()
	exectest.Each(t, func(t *testing.T, db *exectest.DB) {
		base := exectest.Now()
		rows := db.Claim(1, "c1", base, base.Add(time.Minute), 3)
		db.RefuseUpdates()
		var once sync.Once
		entered, release := make(chan struct{}), make(chan struct{})
		heldFn := func() []string {
			once.Do(func() { close(entered) })
			<-release
			return []string{rows[0].ID}
		}
		logger, logs := exectest.Logger()
		ctx, cancel := context.WithCancel(t.Context())
		stop := exectest.Background(t, func(context.Context) {
			lease.Heartbeat(ctx, db.Exec, "c1", heldFn, time.Millisecond, time.Minute, exectest.Now, logger)
		})
		<-entered
		cancel() // the client stops while a beat is under way
		close(release)
		stop()
		require.Zero(t, logs.Count("heartbeat failed"), "a beat cut short by the stop is no failure")
	})
}

// rescues collects the jobs a rescuer reports.
type rescues struct {
	mu   sync.Mutex
	rows map[string]*driver.JobRow
	n    int // calls, repeats included
}

func (r *rescues) add(row *driver.JobRow) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rows == nil {
		r.rows = map[string]*driver.JobRow{}
	}
	r.rows[row.ID] = row
	r.n++
}

// wait waits until n calls were made, and returns the jobs reported.
func (r *rescues) wait(t *testing.T, n int) map[string]*driver.JobRow {
	t.Helper()
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.n >= n
	}, 20*time.Second, time.Millisecond)
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Equal(t, n, r.n)
	return r.rows
}

func TestRescueTakesBackExpiredLeases(t *testing.T) {
	t.Parallel()
	exectest.Each(t, func(t *testing.T, db *exectest.DB) {
		base := exectest.Now()
		retry := db.Claim(1, "c1", base, base.Add(time.Minute), 3)[0]
		last := db.Claim(1, "c1", base, base.Add(time.Minute), 0)[0] // no retry left
		now := base.Add(2 * time.Minute)
		logger, logs := exectest.Logger()
		var got rescues
		exectest.Background(t, func(ctx context.Context) {
			lease.Rescue(ctx, db.Exec, time.Hour, func() time.Time { return now }, logger, got.add)
		})
		rescued := got.wait(t, 2) // at once: the interval is an hour

		want := driver.AttemptError{Attempt: 1, At: now, Error: "lease expired", StartedAt: base, ClientID: "c1"}
		stored := db.Get(retry.ID)
		require.Equal(t, driver.StatusPending, stored.Status)
		sameTime(t, now, stored.RunAt, "runs again at once")
		require.Empty(t, stored.LockedBy)
		require.True(t, stored.LockedUntil.IsZero())
		require.Equal(t, 1, stored.Attempt)
		requireErrors(t, []driver.AttemptError{want}, stored.Errors)
		require.Equal(t, driver.StatusPending, rescued[retry.ID].Status, "reported as it is after the rescue")

		stored = db.Get(last.ID)
		require.Equal(t, driver.StatusFailed, stored.Status)
		sameTime(t, now, stored.FinalizedAt)
		require.Empty(t, stored.LockedBy)
		requireErrors(t, []driver.AttemptError{want}, stored.Errors)
		require.Equal(t, driver.StatusFailed, rescued[last.ID].Status)

		require.Equal(t, 1, logs.Count("level=INFO", "rescued job whose lease expired", "job_id="+retry.ID, "status=pending"))
		require.Equal(t, 1, logs.Count("level=INFO", "rescued job whose lease expired", "job_id="+last.ID, "status=failed"))
	})
}

// requireErrors fails t unless got are the attempt errors want.
func requireErrors(t *testing.T, want, got []driver.AttemptError) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		w, g := want[i], got[i]
		require.Equal(t, w.Attempt, g.Attempt)
		require.Equal(t, w.Error, g.Error)
		require.Equal(t, w.ClientID, g.ClientID)
		sameTime(t, w.At, g.At)
		sameTime(t, w.StartedAt, g.StartedAt)
	}
}

func TestRescueLeavesUnexpiredLeasesAndOtherJobsAlone(t *testing.T) {
	t.Parallel()
	exectest.Each(t, func(t *testing.T, db *exectest.DB) {
		base := exectest.Now()
		now := base.Add(2 * time.Minute)
		expired := db.Claim(1, "c1", base, base.Add(time.Minute), 3)[0]
		alive := db.Claim(1, "c1", base, base.Add(3*time.Minute), 3)[0]
		endsNow := db.Claim(1, "c2", base, now, 3)[0] // a lease ends after its last instant
		done := db.Claim(1, "c1", base, base.Add(time.Minute), 3)[0]
		matched, err := db.Exec.JobFinalize(t.Context(), &driver.JobFinalizeParams{Jobs: []*driver.JobFinalize{{
			ID: done.ID, Attempt: done.Attempt, LockedBy: done.LockedBy, AttemptedAt: done.AttemptedAt,
			Status: driver.StatusCompleted, FinalizedAt: base,
		}}})
		require.NoError(t, err)
		require.Equal(t, []bool{true}, matched)
		pending := db.Insert(1, base, 3)[0]

		var got rescues
		logger, _ := exectest.Logger()
		exectest.Background(t, func(ctx context.Context) {
			lease.Rescue(ctx, db.Exec, time.Millisecond, func() time.Time { return now }, logger, got.add)
		})
		got.wait(t, 1)
		require.Equal(t, driver.StatusPending, db.Get(expired.ID).Status)
		time.Sleep(20 * time.Millisecond) // rounds that must find nothing more
		require.Len(t, got.wait(t, 1), 1)

		for _, row := range []*driver.JobRow{alive, endsNow} {
			stored := db.Get(row.ID)
			require.Equal(t, driver.StatusProcessing, stored.Status)
			sameTime(t, row.LockedUntil, stored.LockedUntil)
			require.Empty(t, stored.Errors)
		}
		require.Equal(t, driver.StatusCompleted, db.Get(done.ID).Status)
		stored := db.Get(pending.ID)
		require.Equal(t, driver.StatusPending, stored.Status)
		require.Zero(t, stored.Attempt)
		require.Empty(t, stored.Errors)
	})
}

func TestRescueTakesBackMoreThanOneBatchAtOnce(t *testing.T) {
	t.Parallel()
	exectest.Each(t, func(t *testing.T, db *exectest.DB) {
		const n = lease.RescueLimit + 1
		base := exectest.Now()
		rows := db.Claim(n, "c1", base, base.Add(time.Minute), 3)
		var got rescues
		logger, _ := exectest.Logger()
		exectest.Background(t, func(ctx context.Context) {
			lease.Rescue(ctx, db.Exec, time.Hour, func() time.Time { return base.Add(2 * time.Minute) }, logger, got.add)
		})
		// The interval is an hour: every job is taken back in the first
		// round, which asks again while it finds a full batch.
		rescued := got.wait(t, n)
		require.Len(t, rescued, n)
		for _, row := range rows {
			require.Equal(t, driver.StatusPending, rescued[row.ID].Status)
		}
	})
}

func TestRescueKeepsTryingAfterAFailure(t *testing.T) {
	t.Parallel()
	exectest.Each(t, func(t *testing.T, db *exectest.DB) {
		base := exectest.Now()
		row := db.Claim(1, "c1", base, base.Add(time.Minute), 3)[0]
		restore := db.RefuseUpdates()
		var got rescues
		logger, logs := exectest.Logger()
		exectest.Background(t, func(ctx context.Context) {
			lease.Rescue(ctx, db.Exec, time.Millisecond, func() time.Time { return base.Add(2 * time.Minute) }, logger, got.add)
		})
		require.Eventually(t, func() bool {
			return logs.Count("level=WARN", "rescuing expired jobs failed") >= 2
		}, 10*time.Second, time.Millisecond)
		require.Equal(t, driver.StatusProcessing, db.Get(row.ID).Status)

		restore()
		got.wait(t, 1)
		require.Equal(t, driver.StatusPending, db.Get(row.ID).Status)
	})
}
