package faults_test

import (
	"bufio"
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/pgxdriver"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/internal/testkit/dbtest"
	"github.com/sluicehq/sluice/internal/testkit/faults/faultjob"
)

var longForm = flag.Bool("faults.long", os.Getenv("SLUICE_FAULTS_LONG") == "1",
	"run each fault scenario for minutes instead of seconds (also SLUICE_FAULTS_LONG=1)")

// EnvReport names a file the summary lines are appended to, so that CI can
// show them without running the tests verbosely.
const EnvReport = "SLUICE_FAULTS_REPORT"

var reportMu sync.Mutex

// summary prints one summary line, and appends it to the file named by
// SLUICE_FAULTS_REPORT if set.
func summary(t *testing.T, format string, args ...any) {
	t.Helper()
	line := fmt.Sprintf(format, args...)
	fmt.Println(line)
	path := os.Getenv(EnvReport)
	if path == "" {
		return
	}
	reportMu.Lock()
	defer reportMu.Unlock()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	defer f.Close()
	_, err = fmt.Fprintln(f, line)
	require.NoError(t, err)
}

// span returns short, or long under -faults.long.
func span(short, long time.Duration) time.Duration {
	if *longForm {
		return long
	}
	return short
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// workerBin builds cmd/faultworker once per test binary and returns its
// path.
func workerBin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sluice-faultworker-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "faultworker")
		out, err := exec.Command("go", "build", "-o", binPath, "./cmd/faultworker").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return binPath
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// target is one database the scenario runs on, with a client of the test's
// own to enqueue through and a handle to check invariants with.
type target struct {
	driver string // "pg" or "sqlite"
	args   []string
	db     *sql.DB
	// produce enqueues jobs through the test's client.
	produce func(ctx context.Context, p faultjob.Producer) error
	// client is the test's client, for what produce does not do.
	client testClient
	// pg only: the database's name and an admin pool on it.
	dbName string
	pool   *pgxpool.Pool
	url    string
	// dueNow is an SQL condition true of jobs whose run_at has come.
	dueNow string

	mu    sync.Mutex
	known map[string]bool // IDs of jobs known to be committed
}

func (tg *target) knownCount() int {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return len(tg.known)
}

func (tg *target) commit(id string) {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	tg.known[id] = true
}

// producer returns a Producer that records the jobs it commits.
func (tg *target) producer(batch int, every time.Duration) faultjob.Producer {
	return faultjob.Producer{Batch: batch, Every: every, Committed: tg.commit}
}

// produceFor enqueues a batch every interval until d has passed.
func (tg *target) produceFor(t *testing.T, d time.Duration, batch int, every time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	require.NoError(t, tg.produce(ctx, tg.producer(batch, every)))
}

// produceBackground runs produceFor in the background; the returned func
// waits for it.
func (tg *target) produceBackground(t *testing.T, d time.Duration, batch int, every time.Duration) (wait func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(t.Context(), d)
		defer cancel()
		if err := tg.produce(ctx, tg.producer(batch, every)); err != nil {
			t.Errorf("produce: %v", err)
		}
	}()
	return func() { <-done }
}

func newSQLiteTarget(t *testing.T) *target {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jobs.db")
	db, err := sqlitedriver.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = db.Exec(faultjob.EffectsDDL)
	require.NoError(t, err)
	c, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{Queues: faultjob.Queues(0)})
	require.NoError(t, err)
	st := &faultjob.Store[*sql.Tx]{
		Begin:    func(ctx context.Context) (*sql.Tx, error) { return db.BeginTx(ctx, nil) },
		Commit:   func(_ context.Context, tx *sql.Tx) error { return tx.Commit() },
		Rollback: func(_ context.Context, tx *sql.Tx) error { return tx.Rollback() },
	}
	return &target{
		driver: "sqlite", args: []string{"-sqlite", path}, db: db, known: map[string]bool{},
		dueNow:  `run_at <= CAST(unixepoch('subsec') * 1000000 AS INTEGER)`,
		produce: func(ctx context.Context, p faultjob.Producer) error { return faultjob.Produce(ctx, c, st, p) },
		client:  c,
	}
}

// testClient is what a scenario uses of the test's client, whatever its
// transaction type.
type testClient interface {
	Enqueue(ctx context.Context, args sluice.JobArgs, opts *sluice.EnqueueOptions) (*sluice.EnqueueResult, error)
	PauseQueue(ctx context.Context, queue string) (*sluice.QueueState, error)
	ResumeQueue(ctx context.Context, queue string) (*sluice.QueueState, error)
	SetQueueLimits(ctx context.Context, queue string, l sluice.QueueLimits) (*sluice.QueueState, error)
	SetKeyLimits(ctx context.Context, scope sluice.Scope, l sluice.KeyLimits) (*sluice.Limits, error)
	EnqueueMany(ctx context.Context, params []sluice.EnqueueParams) ([]sluice.EnqueueResult, error)
	List(ctx context.Context, f *sluice.ListFilter) (*sluice.ListResult, error)
	EnqueueWorkflow(ctx context.Context, w *sluice.Workflow) (*sluice.WorkflowResult, error)
	EnqueueBatch(ctx context.Context, b *sluice.Batch) (*sluice.BatchResult, error)
}

// newPGTarget creates a database of the scenario's own on the test server,
// dropped at cleanup, so that faults aimed at it touch nothing else.
func newPGTarget(t *testing.T) *target {
	t.Helper()
	base := dbtest.URL(t)
	ctx := t.Context()
	admin, err := pgx.Connect(ctx, base)
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close(context.Background()) })
	var b [6]byte
	for i := range b {
		b[i] = byte(rand.IntN(256))
	}
	name := fmt.Sprintf("sluice_fault_%x", b)
	_, err = admin.Exec(ctx, "CREATE DATABASE "+name)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	require.NoError(t, err)
	u.Path = "/" + name
	dbURL := u.String()
	cfg, err := pgxpool.ParseConfig(dbURL)
	require.NoError(t, err)
	cfg.MaxConns = 6
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = pool.Exec(ctx, faultjob.EffectsDDL)
	require.NoError(t, err)
	c, err := sluice.NewClient(pgxdriver.New(pool), &sluice.Config{Queues: faultjob.Queues(0)})
	require.NoError(t, err)
	st := &faultjob.Store[pgx.Tx]{
		Begin:    func(ctx context.Context) (pgx.Tx, error) { return pool.Begin(ctx) },
		Commit:   func(ctx context.Context, tx pgx.Tx) error { return tx.Commit(ctx) },
		Rollback: func(ctx context.Context, tx pgx.Tx) error { return tx.Rollback(ctx) },
	}
	db := stdlib.OpenDBFromPool(pool)
	t.Cleanup(func() { _ = db.Close() })
	return &target{
		driver: "pg", args: []string{"-url", dbURL}, db: db, dbName: name, pool: pool, url: dbURL,
		known: map[string]bool{}, dueNow: `run_at <= now()`,
		produce: func(ctx context.Context, p faultjob.Producer) error { return faultjob.Produce(ctx, c, st, p) },
		client:  c,
	}
}

// proc is one faultworker process.
type proc struct {
	t      *testing.T
	tg     *target
	args   []string
	cmd    *exec.Cmd
	ready  chan struct{}
	exited chan struct{}
	stderr *os.File
}

// start starts a faultworker on tg with extra flags and, unless it
// produces, waits until its client has started.
func (tg *target) start(t *testing.T, flags ...string) *proc {
	t.Helper()
	args := append(append([]string{}, tg.args...), flags...)
	p := &proc{t: t, tg: tg, args: args, ready: make(chan struct{}), exited: make(chan struct{})}
	p.launch()
	t.Cleanup(func() {
		if p.alive() {
			p.kill9()
		}
	})
	if !strings.Contains(strings.Join(flags, " "), "-produce") {
		p.waitReady()
	}
	return p
}

func (p *proc) launch() {
	t := p.t
	t.Helper()
	p.ready, p.exited = make(chan struct{}), make(chan struct{})
	f, err := os.CreateTemp(t.TempDir(), "faultworker-*.log")
	require.NoError(t, err)
	p.stderr = f
	pr, pw := io.Pipe()
	p.cmd = exec.Command(workerBin(t), p.args...)
	p.cmd.Stdout, p.cmd.Stderr = pw, f
	require.NoError(t, p.cmd.Start())
	ready, exited := p.ready, p.exited
	go func() {
		_ = p.cmd.Wait()
		_ = pw.Close()
		close(exited)
	}()
	go func() {
		sc := bufio.NewScanner(pr)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "ready":
				once.Do(func() { close(ready) })
			case strings.HasPrefix(line, "committed "):
				p.tg.commit(strings.TrimPrefix(line, "committed "))
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
}

func (p *proc) waitReady() {
	p.t.Helper()
	select {
	case <-p.ready:
	case <-p.exited:
		p.t.Fatalf("faultworker exited before it was ready: %s\n%s", p.cmd.ProcessState, p.log())
	case <-time.After(30 * time.Second):
		p.t.Fatalf("faultworker not ready after 30s\n%s", p.log())
	}
}

func (p *proc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

func (p *proc) log() string {
	b, _ := os.ReadFile(p.stderr.Name())
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// kill9 kills the process with SIGKILL and waits for it.
func (p *proc) kill9() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// restart starts the process again with the same flags.
func (p *proc) restart() {
	p.t.Helper()
	p.launch()
	if !strings.Contains(strings.Join(p.args, " "), "-produce") {
		p.waitReady()
	}
}

// term stops the process with SIGTERM, so that its client stops
// gracefully, and waits for it to exit.
func (p *proc) term() {
	p.t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(60 * time.Second):
		p.t.Errorf("faultworker did not stop within 60s of SIGTERM\n%s", p.log())
		p.kill9()
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		p.t.Errorf("faultworker exited with %d\n%s", code, p.log())
	}
}

// rssKiB returns the process's resident set size and its peak, in KiB.
func (p *proc) rssKiB() (rss, hwm int) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, 0
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.Atoi(f[1])
		switch f[0] {
		case "VmRSS:":
			rss = n
		case "VmHWM:":
			hwm = n
		}
	}
	return rss, hwm
}

// unfinished counts the jobs not yet completed, failed or cancelled. A
// scenario's faults may cut the test's own connections too: a failed query
// is retried.
func (tg *target) unfinished(t *testing.T) int {
	t.Helper()
	var (
		n   int
		err error
	)
	for range 10 {
		err = tg.db.QueryRowContext(t.Context(),
			`SELECT count(*) FROM sluice_jobs WHERE status NOT IN ('completed', 'failed', 'cancelled')`).Scan(&n)
		if err == nil {
			return n
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, err)
	return n
}

// statusCounts returns how many jobs have each status.
func (tg *target) statusCounts(t *testing.T) map[string]int {
	t.Helper()
	rows, err := tg.db.QueryContext(t.Context(), `SELECT status, count(*) FROM sluice_jobs GROUP BY status`)
	require.NoError(t, err)
	defer rows.Close()
	m := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		require.NoError(t, rows.Scan(&s, &n))
		m[s] = n
	}
	require.NoError(t, rows.Err())
	return m
}

// drain waits until every job is finished, failing t after timeout.
func (tg *target) drain(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for tg.unfinished(t) > 0 {
		if time.Now().After(deadline) {
			t.Errorf("jobs not drained after %s: %v", timeout, tg.statusCounts(t))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// verdict is what the database says after a scenario.
type verdict struct {
	jobs, lost, dups, stuck int
	recovery                float64
}

// check counts, from the database, the jobs that were lost (known to be
// committed, or stored, but never completed with their effect), the
// business rows beyond one per job, and the jobs still processing though no
// worker is running. It must be called once every worker has exited.
// recovery is the longest time from one of faults to the first completion
// after it, in seconds.
func (tg *target) check(t *testing.T, faults []time.Time) verdict {
	t.Helper()
	ctx := t.Context()
	status, errs := map[string]string{}, map[string]string{}
	rows, err := tg.db.QueryContext(ctx, `SELECT CAST(id AS TEXT), status, COALESCE(CAST(errors AS TEXT), '') FROM sluice_jobs`)
	require.NoError(t, err)
	for rows.Next() {
		var id, s, e string
		require.NoError(t, rows.Scan(&id, &s, &e))
		status[id], errs[id] = s, e
	}
	require.NoError(t, rows.Err())
	rows.Close()
	effects := map[string]int{}
	var times []int64
	rows, err = tg.db.QueryContext(ctx, `SELECT job_id, done_at FROM fault_effects`)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		var at int64
		require.NoError(t, rows.Scan(&id, &at))
		effects[id]++
		times = append(times, at)
	}
	require.NoError(t, rows.Err())
	rows.Close()

	var v verdict
	tg.mu.Lock()
	all := map[string]bool{}
	for id := range tg.known {
		all[id] = true
	}
	tg.mu.Unlock()
	for id := range status {
		all[id] = true
	}
	v.jobs = len(all)
	for id := range all {
		s, ok := status[id]
		if !ok || s != "completed" || effects[id] == 0 {
			v.lost++
			if v.lost <= 5 {
				t.Logf("lost job %s: stored=%v status=%q effects=%d errors=%.2000s", id, ok, s, effects[id], errs[id])
			}
		}
		if s == "processing" {
			v.stuck++
		}
	}
	for id, n := range effects {
		if n > 1 {
			v.dups += n - 1
			t.Logf("job %s took effect %d times", id, n)
		}
		if !all[id] {
			v.dups += n
			t.Logf("effect for unknown job %s", id)
		}
	}
	v.recovery = recovery(times, faults)
	return v
}

// recovery returns the longest time, over faults, from a fault to the
// first of times (when effects were done, in Unix microseconds) after it,
// in seconds; -1 when none followed any. It sorts times.
func recovery(times []int64, faults []time.Time) float64 {
	slices.Sort(times)
	out := -1.0
	for _, f := range faults {
		us := f.UnixMicro()
		if i := sort.Search(len(times), func(i int) bool { return times[i] > us }); i < len(times) {
			out = max(out, float64(times[i]-us)/1e6)
		}
	}
	return out
}

// report prints the scenario's FAULT line and fails t if a job was lost,
// took effect twice or was left stuck.
func report(t *testing.T, scenario string, tg *target, v verdict) {
	t.Helper()
	line := fmt.Sprintf("FAULT scenario=%s driver=%s jobs=%d lost=%d duplicate_effects=%d stuck=%d recovery_s=%.3f",
		scenario, tg.driver, v.jobs, v.lost, v.dups, v.stuck, v.recovery)
	summary(t, "%s", line)
	require.Positive(t, v.jobs, "the scenario enqueued no job")
	if v.lost != 0 || v.dups != 0 || v.stuck != 0 {
		t.Errorf("%s: statuses %v", line, tg.statusCounts(t))
	}
}

// stopAll stops every process gracefully.
func stopAll(procs []*proc) {
	var wg sync.WaitGroup
	for _, p := range procs {
		if p.alive() {
			wg.Go(p.term)
		}
	}
	wg.Wait()
}

// terminateBackends terminates the backends connected to tg's database,
// all of them or only the worker processes', and returns how many.
func (tg *target) terminateBackends(t *testing.T, workersOnly bool) int {
	t.Helper()
	q := `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = $1 AND pid <> pg_backend_pid()`
	if workersOnly {
		q += ` AND application_name = '` + faultjob.AppName + `'`
	}
	q += `) killed`
	// A connection of its own, so that the kill does not cut the pool the
	// test enqueues through in the middle of this query.
	conn, err := pgx.Connect(t.Context(), tg.url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var n int
	require.NoError(t, conn.QueryRow(t.Context(), q, tg.dbName).Scan(&n))
	return n
}
