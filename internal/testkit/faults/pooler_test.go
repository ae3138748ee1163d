package faults_test

import (
	"cmp"
	"context"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/faults/faultjob"
	"github.com/sluicehq/sluice/internal/testkit/pgbouncertest"
)

// pooledMode is the pgx query mode of worker processes behind PgBouncer:
// descriptions cached per connection, no prepared statement by name, which
// PgBouncer before 1.21 cannot keep across server connections.
const pooledMode = "cache_describe"

// pooled makes tg's worker processes connect through a PgBouncer of the
// test's own in transaction mode with poolSize server connections, and
// listen on a direct connection when listen is set (else they poll). The
// test's own client stays on its direct pool.
func pooled(t *testing.T, tg *target, poolSize int, listen bool) *pgbouncertest.Bouncer {
	t.Helper()
	b := pgbouncertest.Start(t, pgbouncertest.Options{PoolSize: poolSize})
	tg.args = []string{"-url", b.URL(t, tg.url, "default_query_exec_mode", pooledMode)}
	if listen {
		tg.args = append(tg.args, "-listen-url", tg.url)
	}
	return b
}

// Scenario kill9_pgbouncer: scenario 1 (TestKill9Workers) with the worker
// processes behind PgBouncer in transaction mode, on five server
// connections, listening on direct connections. A process killed in the
// middle of a job's transaction leaves PgBouncer to drop its server
// connection, which rolls the transaction back; the job comes back when
// its lease expires.
func TestKill9WorkersThroughPgBouncer(t *testing.T) {
	tg := newPGTarget(t)
	pooled(t, tg, 5, true)
	underFaults(t, tg, "kill9_pgbouncer", "20ms", span(6*time.Second, 45*time.Second),
		func() time.Duration { return jitter(700, 1300) }, killAndRestart)
}

// startMany starts n worker processes on tg at once and waits until every
// one has started.
func startMany(t *testing.T, tg *target, n int, flags ...string) []*proc {
	t.Helper()
	args := append(append([]string{}, tg.args...), flags...)
	procs := make([]*proc, n)
	for i := range procs {
		p := &proc{t: t, tg: tg, args: args}
		p.launch()
		t.Cleanup(func() {
			if p.alive() {
				p.kill9()
			}
		})
		procs[i] = p
	}
	for _, p := range procs {
		p.waitReady()
	}
	return procs
}

// completionRate returns how many jobs a second tg's workers completed,
// from the first completion to the last, once all jobs are finished.
func completionRate(t *testing.T, tg *target, jobs int) float64 {
	t.Helper()
	var first, last int64
	require.NoError(t, tg.db.QueryRowContext(t.Context(), `SELECT min(done_at), max(done_at) FROM fault_effects`).
		Scan(&first, &last))
	return float64(jobs-1) / (float64(last-first) / 1e6)
}

// pickups enqueues n jobs one at a time into tg's idle workers, each once
// the one before has finished and after a random pause (so that the
// enqueues fall anywhere in the workers' poll interval), and returns how
// long each waited from its enqueue to its claim, in milliseconds, sorted.
func pickups(t *testing.T, tg *target, n int) []float64 {
	t.Helper()
	since := time.Now()
	for range n {
		time.Sleep(jitter(100, 700))
		require.NoError(t, tg.produce(t.Context(), faultjob.Producer{Jobs: 1, Batch: 1, Committed: tg.commit}))
		tg.drain(t, time.Minute)
	}
	rows, err := tg.pool.Query(t.Context(), `SELECT extract(epoch FROM attempted_at - created_at)::float8 * 1000
		FROM sluice_jobs WHERE created_at >= $1 ORDER BY 1`, since)
	require.NoError(t, err)
	ms, err := pgx.CollectRows(rows, pgx.RowTo[float64])
	require.NoError(t, err)
	require.Len(t, ms, n)
	return ms
}

// poolWatch is what watchPools saw of a pool.
type poolWatch struct {
	servers, waiting int           // the most server connections and waiting clients
	maxWait          time.Duration // the longest a client waited for a server connection
}

// watchPools samples b's pool of database db every 100 ms until stop is
// called, and returns the most it saw.
func watchPools(t *testing.T, b *pgbouncertest.Bouncer, db string) (stop func() poolWatch) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var (
		wg sync.WaitGroup
		w  poolWatch
	)
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if stats, err := b.Stats(ctx); err == nil {
				w.servers = max(w.servers, stats[db].Servers())
				w.waiting = max(w.waiting, stats[db].ClientsWaiting)
				w.maxWait = max(w.maxWait, stats[db].MaxWait)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	return func() poolWatch {
		cancel()
		wg.Wait()
		return w
	}
}

// poolerRun is one configuration of the pooler scale test.
type poolerRun struct {
	name               string
	pooled             bool // through PgBouncer, else direct
	processes, workers int
	mode               string // pgx's default_query_exec_mode; "" is pgx's default
}

// poolerResult is what a poolerRun measured.
type poolerResult struct {
	rate   float64   // jobs a second while the backlog burned
	v      verdict   // what the database says afterwards
	pickup []float64 // milliseconds from enqueue to claim of single jobs, sorted
	pool   poolWatch // PgBouncer's pool, when pooled
}

// The pooler scale test: 100 worker processes of four workers and four
// connections each (400 client connections) share 20 server connections
// through PgBouncer in transaction mode, polling at the default interval
// (1 s: their Listen finds the pooler and declines), while a backlog of
// jobs burns; then ten jobs are enqueued one at a time into the idle
// workers, which find them by polling. The same 400 workers on the same 20
// server connections without a pooler, for the comparison, are 5
// processes of 80 workers and four connections each, listening, in pgx's
// default query mode. The short form burns 3,000 jobs; -faults.long burns
// 30,000, and adds two runs that tell the pooler's cost from the query
// mode's: the 5 processes through PgBouncer, and directly in the pooled
// processes' query mode.
func TestPoolerManyProcesses(t *testing.T) {
	const (
		processes, workers, conns = 100, 4, 4
		serverConns               = 20
		directProcesses           = serverConns / conns
		directWorkers             = processes * workers / directProcesses
	)
	jobs := 3000
	runs := []poolerRun{
		{"pgbouncer", true, processes, workers, pooledMode},
		{"direct", false, directProcesses, directWorkers, ""},
	}
	if *longForm {
		jobs = 30000
		runs = append(runs, poolerRun{"pgbouncer_few", true, directProcesses, directWorkers, pooledMode},
			poolerRun{"direct_describe", false, directProcesses, directWorkers, pooledMode})
	}
	results := make([]poolerResult, len(runs))
	for i, run := range runs {
		// Each run in a subtest of its own, so that its database, its
		// processes and its PgBouncer's server connections are gone
		// before the next starts.
		t.Run(run.name, func(t *testing.T) {
			r := run.burn(t, jobs, conns, serverConns)
			results[i] = r
			summary(t, "FAULT_POOLER_RUN run=%s processes=%d workers=%d conns=%d pooled=%t mode=%s jobs=%d jobs_per_s=%.0f "+
				"pickup_p50_ms=%.0f pickup_max_ms=%.0f",
				run.name, run.processes, run.workers, conns, run.pooled, cmp.Or(run.mode, "cache_statement"), r.v.jobs, r.rate,
				r.pickup[len(r.pickup)/2], r.pickup[len(r.pickup)-1])
			require.Equal(t, jobs+len(r.pickup), r.v.jobs)
			require.Zero(t, r.v.lost, "lost")
			require.Zero(t, r.v.dups, "duplicate effects")
			require.Zero(t, r.v.stuck, "stuck")
		})
	}
	if t.Failed() {
		return
	}
	p, d := results[0], results[1]
	summary(t, "FAULT_POOLER processes=%d server_conns=%d jobs=%d lost=%d duplicate_effects=%d stuck=%d "+
		"jobs_per_s=%.0f direct_processes=%d direct_jobs_per_s=%.0f ratio=%.2f "+
		"pickup_p50_ms=%.0f direct_pickup_p50_ms=%.0f max_server_conns_seen=%d max_clients_waiting=%d max_wait_ms=%d",
		processes, serverConns, p.v.jobs, p.v.lost, p.v.dups, p.v.stuck,
		p.rate, directProcesses, d.rate, p.rate/d.rate,
		p.pickup[len(p.pickup)/2], d.pickup[len(d.pickup)/2], p.pool.servers, p.pool.waiting, p.pool.maxWait.Milliseconds())
	require.LessOrEqual(t, p.pool.servers, serverConns, "PgBouncer held more server connections than its pool")
}

// burn starts run's processes on a database of their own, with conns
// connections each, through a PgBouncer of serverConns server connections
// if run is pooled; enqueues a backlog of jobs at once and measures how
// fast it burns, then how soon single jobs are picked up; and stops the
// processes and checks the database.
func (run poolerRun) burn(t *testing.T, jobs, conns, serverConns int) poolerResult {
	t.Helper()
	tg := newPGTarget(t)
	var stopWatch func() poolWatch
	switch {
	case run.pooled:
		stopWatch = watchPools(t, pooled(t, tg, serverConns, false), tg.dbName)
	case run.mode != "":
		u, err := url.Parse(tg.url)
		require.NoError(t, err)
		q := u.Query()
		q.Set("default_query_exec_mode", run.mode)
		u.RawQuery = q.Encode()
		tg.args = []string{"-url", u.String()}
	}
	procs := startMany(t, tg, run.processes, "-workers", strconv.Itoa(run.workers), "-conns", strconv.Itoa(conns),
		"-work", "0s", "-lease", "10s", "-poll", "1s")
	var r poolerResult
	start := time.Now()
	require.NoError(t, tg.produce(t.Context(), faultjob.Producer{Jobs: jobs, Batch: 500, Committed: tg.commit}))
	tg.drain(t, 5*time.Minute)
	r.rate = completionRate(t, tg, jobs)
	if stopWatch != nil {
		r.pool = stopWatch()
	}
	r.pickup = pickups(t, tg, 10)
	stopAll(procs)
	r.v = tg.check(t, []time.Time{start})
	return r
}
