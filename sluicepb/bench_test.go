package sluicepb_test

import (
	"bytes"
	"context"
	"database/sql"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/types"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/internal/testkit/clientbench"
	"github.com/sluicehq/sluice/sluicepb"
)

// Benchmarks of the queue inside PocketBase, recorded in
// docs/performance.md. Each runs its systems side by side, alternately,
// in one process, and reports medians: this machine is shared and noisy.

// benchReps is how many times each benchmark runs each of its systems.
func benchReps() int {
	if clientbench.Small() {
		return 1
	}
	return 5
}

// fillBacklog enqueues n benchmark jobs through c, in batches.
func fillBacklog(b *testing.B, c *sluice.Client[*sql.Tx], n int) {
	b.Helper()
	const batch = 1000
	params := make([]sluice.EnqueueParams, 0, batch)
	for i := range n {
		params = append(params, sluice.EnqueueParams{Args: clientbench.Args{N: i}})
		if len(params) == batch || i == n-1 {
			if _, err := c.EnqueueMany(context.Background(), params); err != nil {
				b.Fatal(err)
			}
			params = params[:0]
		}
	}
}

// median returns the median of xs.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// burnInPocketBase works n jobs of a backlog in data.db through
// PocketBase's pools and returns jobs/s.
func burnInPocketBase(b *testing.B, n int) float64 {
	b.Helper()
	app := core.NewBaseApp(core.BaseAppConfig{DataDir: b.TempDir()})
	jobs, err := sluicepb.Register(app, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := app.Bootstrap(); err != nil {
		b.Fatal(err)
	}
	defer app.ResetBootstrapState()
	c, err := jobs.Client()
	if err != nil {
		b.Fatal(err)
	}
	fillBacklog(b, c, n)
	return clientbench.BurnDownRate(b, sluicepb.DriverOf(jobs), n, clientbench.BurnDownOptions{})
}

// burnPlain works n jobs of a backlog with sqlitedriver on a file of its
// own, opened as sqlitedriver.Open does, and returns jobs/s.
func burnPlain(b *testing.B, n int) float64 {
	b.Helper()
	db, err := sqlitedriver.Open(filepath.Join(b.TempDir(), "plain.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	d := sqlitedriver.New(db)
	c, err := sluice.NewClient(d, nil)
	if err != nil {
		b.Fatal(err)
	}
	fillBacklog(b, c, n)
	return clientbench.BurnDownRate(b, d, n, clientbench.BurnDownOptions{})
}

// burnCollectionCron works n records of a tasks collection the way
// PocketBase apps queue work without a job queue: a loop (a cron job, at
// best every minute; here at once) finds pending records by filter, works
// each, and saves it as done. It returns records/s.
func burnCollectionCron(b *testing.B, n int) float64 {
	b.Helper()
	app := core.NewBaseApp(core.BaseAppConfig{DataDir: b.TempDir()})
	if err := app.Bootstrap(); err != nil {
		b.Fatal(err)
	}
	defer app.ResetBootstrapState()
	if err := app.RunAllMigrations(); err != nil {
		b.Fatal(err)
	}
	tasks := core.NewBaseCollection("tasks")
	tasks.Fields.Add(
		&core.JSONField{Name: "payload"},
		&core.SelectField{Name: "status", Values: []string{"pending", "done"}, MaxSelect: 1},
		&core.AutodateField{Name: "created", OnCreate: true},
	)
	tasks.AddIndex("idx_tasks_status", false, "status, created", "")
	if err := app.Save(tasks); err != nil {
		b.Fatal(err)
	}
	err := app.RunInTransaction(func(txApp core.App) error {
		for i := range n {
			r := core.NewRecord(tasks)
			r.Set("payload", map[string]int{"n": i})
			r.Set("status", "pending")
			if err := txApp.Save(r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	done := 0
	for done < n {
		recs, err := app.FindRecordsByFilter("tasks", "status = 'pending'", "created", 100, 0)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range recs {
			r.Set("status", "done") // the work is a no-op, as in the other systems
			if err := app.Save(r); err != nil {
				b.Fatal(err)
			}
			done++
		}
	}
	return float64(n) / time.Since(start).Seconds()
}

// BenchmarkBurnBacklog works a backlog of no-op jobs with the default
// Config (10 workers): inside PocketBase, through its single write
// connection and its read pool; with sqlitedriver on a file of its own;
// and as a tasks collection worked by a loop, the pattern the queue
// replaces. Target: PocketBase at least half of plain sqlitedriver.
func BenchmarkBurnBacklog(b *testing.B) {
	n := clientbench.Size(20_000)
	var inPB, plain, cron, ratios []float64
	for b.Loop() {
		for range benchReps() {
			p := burnInPocketBase(b, n)
			s := burnPlain(b, n)
			inPB, plain, ratios = append(inPB, p), append(plain, s), append(ratios, p/s)
			cron = append(cron, burnCollectionCron(b, n))
		}
	}
	b.ReportMetric(median(inPB), "pocketbase_jobs/s")
	b.ReportMetric(median(plain), "sqlitedriver_jobs/s")
	b.ReportMetric(median(ratios), "pocketbase/sqlitedriver")
	b.ReportMetric(median(cron), "collection_cron_records/s")
	b.ReportMetric(median(inPB)/median(cron), "pocketbase/collection_cron")
}

// BenchmarkRecordCreateUnderLoad measures the latency of creating a
// record over PocketBase's HTTP API while the queue works a backlog at
// full speed in the same app, and while it is idle, in alternating rounds
// so that both see the same machine. Target: the p99 under load at most 3
// times the idle p99: the queue must not starve the app's own writes of
// PocketBase's single write connection.
func BenchmarkRecordCreateUnderLoad(b *testing.B) {
	rounds, perRound, backlog := 10, 100, 200_000
	if clientbench.Small() {
		// Enough for the unyielding queue's two short rounds.
		rounds, perRound, backlog = 2, 20, 20_000
	}
	// The default pool; the same without yielding to requests (the queue
	// claims as if the app were idle); and a pool of two workers: fewer
	// jobs at once leave more of the processors to the app.
	for _, c := range []struct {
		name string
		cfg  sluicepb.Config
	}{
		{"workers=10", sluicepb.Config{}},
		{"workers=10,yield=off", sluicepb.Config{YieldToRequests: -1}},
		{"workers=2", sluicepb.Config{Workers: 2}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				m := createLatency(b, &c.cfg, rounds, perRound, backlog)
				b.ReportMetric(m.idle, "idle_p99_ms")
				b.ReportMetric(m.loaded, "loaded_p99_ms")
				b.ReportMetric(m.loaded/m.idle, "loaded/idle")
				b.ReportMetric(m.idleP50, "idle_p50_ms")
				b.ReportMetric(m.loadedP50, "loaded_p50_ms")
				b.ReportMetric(m.healthIdle, "health_idle_p99_ms")
				b.ReportMetric(m.healthLoaded, "health_loaded_p99_ms")
				b.ReportMetric(m.rate, "jobs/s_meanwhile")
			}
		})
	}
}

// latencies are what createLatency measures: the p99s in ms of record
// creates and of GET /api/health (which writes nothing), idle and under
// load, the creates' p50s, and the jobs/s worked under load.
type latencies struct {
	idle, loaded, healthIdle, healthLoaded, rate float64
	idleP50, loadedP50                           float64
}

// gate lets the benchmark's workers run or holds them.
type gate struct {
	mu     sync.Mutex
	ch     chan struct{} // closed while open
	closed bool          // the gate holds workers
}

func newGate() *gate {
	g := &gate{ch: make(chan struct{})}
	close(g.ch)
	return g
}

func (g *gate) wait() {
	g.mu.Lock()
	ch := g.ch
	g.mu.Unlock()
	<-ch
}

// open lets the held workers and all others run.
func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		close(g.ch)
		g.closed = false
	}
}

// close holds the workers that come to the gate from now on.
func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.ch = make(chan struct{})
		g.closed = true
	}
}

// createLatency serves an app configured by cfg with a backlog of jobs,
// and measures record creates, each followed by a health check, in
// rounds: perRound with the workers held (the queue idle), then perRound
// while they burn the backlog.
func createLatency(b *testing.B, cfg *sluicepb.Config, rounds, perRound, backlog int) latencies {
	b.Helper()
	var worked atomic.Int64
	g := newGate()
	g.close()
	p := newApp(b, cfg, func(j *sluicepb.Jobs) {
		if err := sluicepb.AddWorker(j, sluice.WorkFunc(func(context.Context, *sluice.Job[clientbench.Args]) error {
			g.wait()
			worked.Add(1)
			return nil
		})); err != nil {
			b.Fatal(err)
		}
	})
	orders := core.NewBaseCollection("orders")
	orders.Fields.Add(&core.NumberField{Name: "amount"})
	orders.CreateRule = types.Pointer("") // public
	if err := p.app.Save(orders); err != nil {
		b.Fatal(err)
	}
	c, err := p.jobs.Client()
	if err != nil {
		b.Fatal(err)
	}
	fillBacklog(b, c, backlog)
	p.serve(b)
	defer func() {
		g.open()
		p.terminate(b)
	}()
	timed := func(do func() (*http.Response, error)) time.Duration {
		t0 := time.Now()
		res, err := do()
		if err != nil {
			b.Fatal(err)
		}
		_ = res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatalf("%s %s: %s", res.Request.Method, res.Request.URL, res.Status)
		}
		return time.Since(t0)
	}
	create := func() time.Duration {
		return timed(func() (*http.Response, error) {
			return http.Post(p.url+"/api/collections/orders/records", "application/json",
				bytes.NewReader([]byte(`{"amount": 42}`)))
		})
	}
	health := func() time.Duration {
		return timed(func() (*http.Response, error) { return http.Get(p.url + "/api/health") })
	}
	for range 20 {
		create() // warm up
	}
	var idle, loaded, hIdle, hLoaded []time.Duration
	var busy time.Duration
	var n int64
	for range rounds {
		time.Sleep(50 * time.Millisecond) // the held workers' jobs settle
		for range perRound {
			idle, hIdle = append(idle, create()), append(hIdle, health())
		}
		g.open()
		time.Sleep(50 * time.Millisecond) // up to speed
		start, before := time.Now(), worked.Load()
		for range perRound {
			loaded, hLoaded = append(loaded, create()), append(hLoaded, health())
		}
		busy += time.Since(start)
		n += worked.Load() - before
		g.close()
	}
	if worked.Load() >= int64(backlog) {
		b.Fatalf("the backlog of %d jobs ran out during the measurement: make it larger", backlog)
	}
	return latencies{idle: p99ms(idle), loaded: p99ms(loaded), healthIdle: p99ms(hIdle), healthLoaded: p99ms(hLoaded),
		rate: float64(n) / busy.Seconds(), idleP50: p50ms(idle), loadedP50: p50ms(loaded)}
}

// p50ms returns the median of lat in ms (lat sorted, as p99ms leaves it).
func p50ms(lat []time.Duration) float64 {
	slices.Sort(lat)
	return float64(lat[len(lat)/2]) / float64(time.Millisecond)
}

// p99ms returns the 99th percentile of lat in ms.
func p99ms(lat []time.Duration) float64 {
	slices.Sort(lat)
	return float64(lat[len(lat)*99/100]) / float64(time.Millisecond)
}
