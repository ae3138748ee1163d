package faults_test

import (
	"context"
	"math/rand/v2"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/faults/faultjob"
)

// The scenarios run one after another: they share two cores, and the
// figures they print mean more without neighbours.

// bothDrivers are the drivers a scenario runs on, each with the constructor
// of its target.
var bothDrivers = []struct {
	name string
	new  func(t *testing.T) *target
}{{"pg", newPGTarget}, {"sqlite", newSQLiteTarget}}

// startWorkers starts n worker processes on tg.
func startWorkers(t *testing.T, tg *target, n int, flags ...string) []*proc {
	t.Helper()
	procs := make([]*proc, n)
	for i := range procs {
		procs[i] = tg.start(t, flags...)
	}
	return procs
}

// repeat waits pause() and then calls fault, until run has passed, and
// returns when each fault began.
func repeat(run time.Duration, pause func() time.Duration, fault func()) []time.Time {
	var faults []time.Time
	for end := time.Now().Add(run); time.Now().Before(end); {
		time.Sleep(pause())
		faults = append(faults, time.Now())
		fault()
	}
	return faults
}

// jitter returns a random duration from lo to hi milliseconds.
func jitter(lo, hi int) time.Duration {
	return time.Duration(lo+rand.IntN(hi-lo)) * time.Millisecond
}

// killAndRestart kills one of procs, chosen at random, with SIGKILL and
// starts it again.
func killAndRestart(procs []*proc) {
	p := procs[rand.IntN(len(procs))]
	p.kill9()
	p.restart()
}

// underFaults runs three worker processes, each working 4 jobs of the
// given length at once, while producing 200 jobs a second for run and
// calling fault after every pause; then it drains and reports.
func underFaults(t *testing.T, tg *target, scenario, work string, run time.Duration,
	pause func() time.Duration, fault func(procs []*proc)) {
	t.Helper()
	procs := startWorkers(t, tg, 3, "-workers", "4", "-work", work, "-lease", "2s")
	wait := tg.produceBackground(t, run, 20, 100*time.Millisecond)
	faults := repeat(run, pause, func() { fault(procs) })
	wait()
	finish(t, scenario, tg, procs, faults)
}

// finish waits for the jobs to drain, stops the workers and reports.
func finish(t *testing.T, scenario string, tg *target, procs []*proc, faults []time.Time) {
	t.Helper()
	tg.drain(t, 2*time.Minute)
	stopAll(procs)
	report(t, scenario, tg, tg.check(t, faults))
}

// Scenario 1: kill -9 one of several worker processes mid-job, repeatedly,
// and restart it. Its jobs come back when their leases expire; none is lost
// and none takes effect twice, since a stale attempt's Ack fails.
func TestKill9Workers(t *testing.T) {
	for _, d := range bothDrivers {
		t.Run(d.name, func(t *testing.T) {
			tg := d.new(t)
			underFaults(t, tg, "kill9", "20ms", span(6*time.Second, 45*time.Second),
				func() time.Duration { return jitter(700, 1300) }, killAndRestart)
		})
	}
}

// Scenario 2: every backend of the database is terminated mid-run, as a
// server restart would; the clients reconnect on their own and drain.
func TestDatabaseRestart(t *testing.T) {
	tg := newPGTarget(t)
	every := span(2*time.Second, 10*time.Second)
	underFaults(t, tg, "pg_restart", "10ms", span(6*time.Second, 45*time.Second)-every/2,
		func() time.Duration { return every }, func([]*proc) {
			t.Logf("terminated %d backends", tg.terminateBackends(t, false))
		})
}

// Scenario 3: the workers' connections are terminated several times a
// second for a while.
func TestBackendKills(t *testing.T) {
	tg := newPGTarget(t)
	killed := 0
	underFaults(t, tg, "backend_kills", "10ms", span(5*time.Second, 45*time.Second),
		func() time.Duration { return 200 * time.Millisecond }, func([]*proc) {
			killed += tg.terminateBackends(t, true)
		})
	t.Logf("terminated %d backends", killed)
}

// Scenario 4: idle connections fill the server (leaving a margin for
// everything else on it) while the workers run within their own pools;
// they keep working, and work on once the connections are released.
func TestPoolExhaustion(t *testing.T) {
	tg := newPGTarget(t)
	procs := startWorkers(t, tg, 2, "-workers", "4", "-conns", "4", "-work", "10ms", "-lease", "2s")
	run := span(8*time.Second, 45*time.Second)
	wait := tg.produceBackground(t, run, 10, 100*time.Millisecond)
	time.Sleep(run / 4)

	ctx := t.Context()
	var maxConns, reserved, used int
	require.NoError(t, tg.pool.QueryRow(ctx, `SELECT current_setting('max_connections')::int,
		current_setting('superuser_reserved_connections')::int, (SELECT count(*) FROM pg_stat_activity)`).
		Scan(&maxConns, &reserved, &used))
	const margin = 20
	want := min(300, maxConns-reserved-used-margin)
	require.Positive(t, want, "the server has no connections to spare")
	fault := time.Now()
	var held []*pgx.Conn
	for range want {
		conn, err := pgx.Connect(ctx, tg.url)
		if err != nil {
			t.Logf("connection %d refused: %v", len(held)+1, err)
			break
		}
		held = append(held, conn)
	}
	before := completed(t, tg)
	time.Sleep(run / 2)
	during := completed(t, tg) - before
	for _, c := range held {
		_ = c.Close(context.Background())
	}
	release := time.Now()
	summary(t, "FAULT_POOL driver=pg held=%d of max_connections=%d completed_while_held=%d", len(held), maxConns, during)
	require.Positive(t, during, "no job completed while the connections were held")
	wait()
	finish(t, "pool_exhaustion", tg, procs, []time.Time{fault, release})
}

// completed counts the completed jobs.
func completed(t *testing.T, tg *target) int {
	t.Helper()
	var n int
	require.NoError(t, tg.db.QueryRowContext(t.Context(),
		`SELECT count(*) FROM sluice_jobs WHERE status = 'completed'`).Scan(&n))
	return n
}

// Scenario 5: a session idle in a transaction that took an XID pins the
// horizon, so dead job versions cannot be vacuumed, while load continues;
// throughput, claim latency and dead tuples are measured before, during and
// after.
func TestHeldTransactionHorizon(t *testing.T) {
	tg := newPGTarget(t)
	procs := startWorkers(t, tg, 2, "-workers", "4", "-work", "5ms", "-lease", "2s")
	phase := []time.Duration{span(3*time.Second, 20*time.Second), span(5*time.Second, 90*time.Second),
		span(3*time.Second, 20*time.Second)}
	total := phase[0] + phase[1] + phase[2]
	wait := tg.produceBackground(t, total, 10, 50*time.Millisecond)
	ctx := t.Context()
	start := time.Now()
	time.Sleep(phase[0] - time.Second)
	deadBefore := deadTuples(t, tg)
	holder, err := pgx.Connect(ctx, tg.url)
	require.NoError(t, err)
	defer holder.Close(context.Background())
	tx, err := holder.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, tx.QueryRow(ctx, `SELECT txid_current()`).Scan(new(int64)))
	fault := time.Now()
	time.Sleep(phase[1])
	deadDuring := deadTuples(t, tg)
	require.NoError(t, tx.Rollback(ctx))
	released := time.Now()
	wait()
	tg.drain(t, time.Minute)
	end := time.Now()
	deadAfter := deadTuples(t, tg)
	bounds := []struct {
		name       string
		from, to   time.Time
		deadTuples int64
	}{
		{"before", start, fault, deadBefore},
		{"during", fault, released, deadDuring},
		{"after", released, end, deadAfter},
	}
	for _, b := range bounds {
		jobs, p50, p99 := phaseFigures(t, tg, b.from, b.to)
		summary(t, "FAULT_HORIZON driver=pg phase=%s jobs_per_s=%.0f claim_p50_ms=%.1f claim_p99_ms=%.1f dead_tuples=%d",
			b.name, float64(jobs)/b.to.Sub(b.from).Seconds(), p50, p99, b.deadTuples)
	}
	stopAll(procs)
	report(t, "held_horizon", tg, tg.check(t, []time.Time{fault}))
}

// deadTuples returns the jobs table's dead tuples as the statistics report
// them.
func deadTuples(t *testing.T, tg *target) int64 {
	t.Helper()
	time.Sleep(time.Second) // statistics are flushed about once a second
	var n int64
	require.NoError(t, tg.pool.QueryRow(t.Context(),
		`SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'sluice_jobs'`).Scan(&n))
	return n
}

// phaseFigures returns how many jobs were claimed in [from, to) and the
// median and 99th percentile of their claim latency (run_at to claim).
func phaseFigures(t *testing.T, tg *target, from, to time.Time) (jobs int, p50, p99 float64) {
	t.Helper()
	rows, err := tg.pool.Query(t.Context(), `SELECT extract(epoch FROM attempted_at - run_at) * 1000
		FROM sluice_jobs WHERE attempted_at >= $1 AND attempted_at < $2`, from, to)
	require.NoError(t, err)
	lat, err := pgx.CollectRows(rows, pgx.RowTo[float64])
	require.NoError(t, err)
	if len(lat) == 0 {
		return 0, 0, 0
	}
	sort.Float64s(lat)
	return len(lat), lat[len(lat)/2], lat[len(lat)*99/100]
}

// Scenario 6: producers run at 1.5 times the workers' measured capacity,
// then at half of it; the backlog drains and the workers' memory stays flat.
func TestSustainedOverload(t *testing.T) {
	for _, d := range bothDrivers {
		t.Run(d.name, func(t *testing.T) {
			tg := d.new(t)
			procs := startWorkers(t, tg, 2, "-workers", "2", "-work", "25ms", "-lease", "2s")
			capacity := measureCapacity(t, tg, 300)
			rssStart := make([]int, len(procs))
			for i, p := range procs {
				rssStart[i], _ = p.rssKiB()
			}
			const tick = 50 * time.Millisecond
			perTick := func(rate float64) int { return max(1, int(rate*tick.Seconds()+0.5)) }
			fault := time.Now()
			tg.produceFor(t, span(6*time.Second, 90*time.Second), perTick(1.5*capacity), tick)
			backlog := tg.unfinished(t)
			tg.produceFor(t, span(3*time.Second, 30*time.Second), perTick(0.5*capacity), tick)
			tg.drain(t, 2*time.Minute)
			for i, p := range procs {
				rss, hwm := p.rssKiB()
				summary(t, "FAULT_MEMORY driver=%s worker=%d rss_start_kib=%d rss_end_kib=%d hwm_kib=%d backlog_after_overload=%d capacity_per_s=%.0f",
					tg.driver, i, rssStart[i], rss, hwm, backlog, capacity)
				if rss > 3*rssStart[i] && rss > 64<<10 {
					t.Errorf("worker %d grew from %d KiB to %d KiB", i, rssStart[i], rss)
				}
			}
			stopAll(procs)
			report(t, "overload", tg, tg.check(t, []time.Time{fault}))
		})
	}
}

// measureCapacity enqueues n jobs at once, waits for them, and returns how
// many jobs a second the running workers completed, from the first
// completion to the last.
func measureCapacity(t *testing.T, tg *target, n int) float64 {
	t.Helper()
	require.NoError(t, tg.produce(t.Context(), faultjob.Producer{Jobs: n, Batch: 100, Committed: tg.commit}))
	tg.drain(t, time.Minute)
	var first, last int64
	require.NoError(t, tg.db.QueryRowContext(t.Context(), `SELECT min(done_at), max(done_at) FROM fault_effects`).
		Scan(&first, &last))
	return float64(n-1) / (float64(last-first) / 1e6)
}

// Scenario 7: on SQLite, producer and worker processes are killed with
// SIGKILL in the middle of their writes, repeatedly, and finally all at
// once; the file then opens clean and no job whose commit was reported is
// lost.
func TestSQLiteKill9DuringWrites(t *testing.T) {
	tg := newSQLiteTarget(t)
	workers := startWorkers(t, tg, 2, "-workers", "4", "-work", "5ms", "-lease", "2s")
	producer := tg.start(t, "-produce", "1000000", "-batch", "10", "-every", "25ms")
	all := append([]*proc{producer}, workers...)
	faults := repeat(span(6*time.Second, 45*time.Second), func() time.Duration { return jitter(300, 700) },
		func() { killAndRestart(all) })
	for _, p := range all {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	}
	for _, p := range all {
		<-p.exited
	}
	var integrity string
	require.NoError(t, tg.db.QueryRowContext(t.Context(), `PRAGMA integrity_check`).Scan(&integrity))
	require.Equal(t, "ok", integrity)
	summary(t, "FAULT_SQLITE integrity_check=%s reported_committed=%d", integrity, tg.knownCount())
	restart := time.Now()
	workers = startWorkers(t, tg, 2, "-workers", "4", "-work", "5ms", "-lease", "2s")
	finish(t, "sqlite_kill9_writes", tg, workers, append(faults, restart))
}

// Scenario 8: Stop with a short deadline under load hands every unfinished
// job back at once: right after the process exits, no job is processing and
// every unfinished job is pending and due, so a new worker runs them at once
// instead of after their one-minute leases.
func TestGracefulStopUnderLoad(t *testing.T) {
	for _, d := range bothDrivers {
		t.Run(d.name, func(t *testing.T) {
			tg := d.new(t)
			slow := tg.start(t, "-workers", "8", "-work", "1m", "-lease", "1m", "-stop-timeout", "300ms")
			require.NoError(t, tg.produce(t.Context(), faultjob.Producer{Jobs: 20, Batch: 10, Committed: tg.commit}))
			require.Eventually(t, func() bool { return tg.statusCounts(t)["processing"] == 8 },
				20*time.Second, 20*time.Millisecond, "the worker never ran 8 jobs at once")
			fault := time.Now()
			slow.term()
			took := time.Since(fault)
			counts := tg.statusCounts(t)
			var due int
			require.NoError(t, tg.db.QueryRowContext(t.Context(),
				`SELECT count(*) FROM sluice_jobs WHERE status = 'pending' AND `+tg.dueNow).Scan(&due))
			summary(t, "FAULT_STOP driver=%s stop_s=%.3f statuses=%v pending_due_now=%d", tg.driver, took.Seconds(), counts, due)
			require.Equal(t, 20, due, "every job is handed back, due at once")
			stuck := counts["processing"]
			fast := tg.start(t, "-workers", "8", "-work", "5ms", "-lease", "1m")
			tg.drain(t, 30*time.Second)
			fast.term()
			v := tg.check(t, []time.Time{fault})
			v.stuck = max(v.stuck, stuck)
			report(t, "graceful_stop", tg, v)
		})
	}
}
