package sluiceweb_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/pgxdriver"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/internal/testkit/clientbench"
	"github.com/sluicehq/sluice/internal/testkit/dbtest"
	"github.com/sluicehq/sluice/sluiceweb"
)

// The burn of BenchmarkEventStreams, a few seconds' work: in a burn-down,
// burnDownSQLite or burnDownPostgres jobs, all enqueued before the
// streams open and the timer starts; otherwise enqueueJobs, of which
// burnWatched are enqueued before (those the streams of one job watch),
// the rest during the burn, one a call from burnEnqueuers goroutines, as
// requests of an application enqueue them. burnWorkers workers work them.
const (
	burnDownSQLite   = 10_000
	burnDownPostgres = 30_000
	enqueueJobs      = 10_000
	burnWatched      = 1000
	burnEnqueuers    = 4
	burnWorkers      = 100
	// getEvery is how often each of the two GET loops sends a request:
	// two dashboards' worth of polling, not a load of their own.
	getEvery = 25 * time.Millisecond
	// burnReps is how many times each side runs, in alternating order.
	burnReps = 15
)

// BenchmarkEventStreams measures what open event streams cost the client
// beside them and the API's other requests. Each round, on a fresh
// database, a client that serves a handler works a few thousand no-op jobs at
// full speed, enqueued before (BurnDown) or by the client itself as it
// works, one a call (EnqueueAndWork: each job's enqueue is a change every
// stream of everything gets at once), while two goroutines send GET
// api/jobs?limit=50 and GET api/queues in turn, each every getEvery. The
// rounds alternate without streams and with them: 300 streams of every
// change, or 1,000 streams of one job each (the JS SDK's pattern), read
// as fast as they come by another process, on the same cores. It reports the medians of the burn's jobs/s on each side and of
// the pairs' ratios (with over without), the ratios' spread, the p99
// and maximum of all the GETs of each side's rounds, the process's
// CPU time per job on each side (the GETs' included; the readers run in
// a process of their own), and what a stream received. Run it with -benchtime 1x: one pass is burnReps
// pairs after a round to warm up (with SLUICE_BENCH_SMALL, one pair of
// rounds of a hundredth of the jobs and a tenth of the streams). Postgres
// runs when SLUICE_TEST_DATABASE_URL is set.
func BenchmarkEventStreams(b *testing.B) {
	// Each round's database is closed when the round ends (closing it
	// again at cleanup does nothing): thirty pools open at once would
	// pass the Postgres server's limit of connections.
	sqlite := func(b *testing.B) (driver.Driver[*sql.Tx], func()) {
		db, err := sqlitedriver.Open(filepath.Join(b.TempDir(), "jobs.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = db.Close() })
		return sqlitedriver.New(db), func() { _ = db.Close() }
	}
	postgres := func(b *testing.B) (driver.Driver[pgx.Tx], func()) {
		pool, schema := dbtest.Pool(b)
		return pgxdriver.New(pool, pgxdriver.WithSchema(schema)), pool.Close
	}
	for _, sc := range []streamsScenario{
		{name: "BurnDown/300Unfiltered", streams: 300, burnDown: true},
		{name: "BurnDown/1000OneJob", streams: 1000, oneJob: true, burnDown: true},
		{name: "EnqueueAndWork/300Unfiltered", streams: 300},
		// What every change to every stream costs, for comparison.
		{name: "EnqueueAndWork/300UnfilteredNoRate", streams: 300, rate: -1},
		{name: "EnqueueAndWork/1000OneJob", streams: 1000, oneJob: true},
	} {
		sc.jobs = clientbench.Size(enqueueJobs)
		if sc.burnDown {
			sc.jobs = clientbench.Size(burnDownSQLite)
		}
		if clientbench.Small() {
			sc.streams = max(sc.streams/10, 1)
		}
		b.Run(sc.name+"/SQLite", func(b *testing.B) { benchStreams(b, sc, sqlite) })
		if os.Getenv(dbtest.EnvURL) != "" {
			if sc.burnDown {
				sc.jobs = clientbench.Size(burnDownPostgres)
			}
			b.Run(sc.name+"/Postgres", func(b *testing.B) { benchStreams(b, sc, postgres) })
		}
	}
}

// streamsScenario is the streams a round opens.
type streamsScenario struct {
	name    string
	streams int
	// oneJob filters each stream to one of the jobs enqueued before the
	// burn; otherwise the streams have no filter.
	oneJob bool
	// burnDown enqueues every job before the streams open.
	burnDown bool
	// rate is the handler's Options.StreamRate.
	rate int
	// jobs is how many jobs a round works.
	jobs int
}

// roundResult is what one round measured.
type roundResult struct {
	jobsPerSec float64
	// gets are the latencies of the GETs sent during the burn; errs
	// counts those that failed.
	gets []time.Duration
	errs int64
	// bytes and resets are what the streams received, in all.
	bytes, resets int64
	// cpu is the process's CPU time during the burn, the GETs'
	// included, the readers' not; readersCPU is the readers' process's,
	// from their streams' opening to their end.
	cpu, readersCPU time.Duration
}

func benchStreams[TTx any](b *testing.B, sc streamsScenario, fresh func(*testing.B) (driver.Driver[TTx], func())) {
	// Each side's rounds: [0] without streams, [1] with.
	var sides [2]struct {
		rates, cpu, mb, resets, readersCPU []float64
		gets                               []time.Duration
		errs                               int64
	}
	var ratios []float64
	reps := burnReps
	if clientbench.Small() {
		reps = 1 // a check that it runs
	}
	for b.Loop() {
		streamsRound(b, sc, fresh, false) // warm-up: the first round of a process is slower
		for i := range reps {
			var pair [2]float64
			for _, watched := range []bool{i%2 == 1, i%2 == 0} {
				r := streamsRound(b, sc, fresh, watched)
				side := &sides[0]
				if watched {
					side = &sides[1]
				}
				cpu := float64(r.cpu.Microseconds()) / float64(sc.jobs)
				mb, resets := float64(r.bytes)/float64(sc.streams)/1e6, float64(r.resets)/float64(sc.streams)
				b.Logf("repetition %d, streams %t: %.0f jobs/s, %.0f µs CPU a job, %d GETs (%d failed) p99 %v max %v, "+
					"%.2f MB and %.2f resets a stream", i+1, watched, r.jobsPerSec, cpu, len(r.gets), r.errs,
					percentile(r.gets, 0.99).Round(time.Millisecond), percentile(r.gets, 1).Round(time.Millisecond), mb, resets)
				side.errs += r.errs
				side.rates, side.cpu = append(side.rates, r.jobsPerSec), append(side.cpu, cpu)
				side.mb, side.resets = append(side.mb, mb), append(side.resets, resets)
				side.readersCPU = append(side.readersCPU, float64(r.readersCPU.Microseconds())/float64(sc.jobs))
				side.gets = append(side.gets, r.gets...)
				pair[boolIndex(watched)] = r.jobsPerSec
			}
			ratios = append(ratios, pair[1]/pair[0])
		}
	}
	for i, suffix := range []string{"off", "streams"} {
		side := &sides[i]
		b.ReportMetric(median(side.rates), "jobs/s_"+suffix)
		b.ReportMetric(median(side.cpu), "cpu_us/job_"+suffix)
		b.ReportMetric(ms(percentile(side.gets, 0.99)), "get_p99_ms_"+suffix)
		b.ReportMetric(ms(percentile(side.gets, 1)), "get_max_ms_"+suffix)
		b.ReportMetric(float64(side.errs), "get_failed_"+suffix)
	}
	b.ReportMetric(median(ratios), "streams/off")
	b.ReportMetric(slices.Min(ratios), "streams/off_min")
	b.ReportMetric(slices.Max(ratios), "streams/off_max")
	b.ReportMetric(median(sides[1].mb), "MB/stream")
	b.ReportMetric(median(sides[1].resets), "resets/stream")
	b.ReportMetric(median(sides[1].readersCPU), "readers_cpu_us/job")
}

func boolIndex(v bool) int {
	if v {
		return 1
	}
	return 0
}

// streamsRound runs one round of the burn on d, with the scenario's
// streams open if watched.
func streamsRound[TTx any](b *testing.B, sc streamsScenario, fresh func(*testing.B) (driver.Driver[TTx], func()),
	watched bool) roundResult {
	b.Helper()
	d, release := fresh(b)
	defer release()
	c, finished := burnClient(b, d, sc.jobs)
	// The handler's errors (a GET answered 500) go to the benchmark's log.
	logger := slog.New(slog.NewTextHandler(benchLog{b}, &slog.HandlerOptions{Level: slog.LevelError}))
	h, err := sluiceweb.New(c, &sluiceweb.Options{Authorize: sluiceweb.AllowAll, Logger: logger, StreamRate: sc.rate})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Close()
	ctx := context.Background()

	first := min(burnWatched, sc.jobs)
	if sc.burnDown {
		first = sc.jobs
	}
	before := burnEnqueue(b, c, first)
	var readers *streamReaders
	if watched {
		urls := make([]string, sc.streams)
		for i := range urls {
			urls[i] = srv.URL + "/api/events"
			if sc.oneJob {
				urls[i] += "?ids=" + before[i%len(before)]
			}
		}
		readers = startReaders(b, urls)
	}
	stopGets := startGets(srv.URL)

	start, cpu0 := time.Now(), processCPU()
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	var enqueuers sync.WaitGroup
	var left atomic.Int64
	left.Store(int64(sc.jobs - first))
	for range burnEnqueuers {
		enqueuers.Go(func() {
			for left.Add(-1) >= 0 {
				if err := retry(func() error {
					_, err := c.Enqueue(ctx, mailArgs{To: "a@example.com"}, nil)
					return err
				}); err != nil {
					panic(err) // not the benchmark's goroutine: b.Fatal cannot stop it
				}
			}
		})
	}
	enqueuers.Wait()
	<-finished
	elapsed, cpu := time.Since(start), processCPU()-cpu0
	gets, errs := stopGets()
	if err := c.Stop(ctx); err != nil {
		b.Fatal(err)
	}
	bytes, readersCPU := readers.close(b)
	return roundResult{jobsPerSec: float64(sc.jobs) / elapsed.Seconds(), gets: gets, errs: errs, bytes: bytes,
		resets: int64(sluiceweb.StreamResets(h)), cpu: cpu, readersCPU: readersCPU}
}

// burnClient returns a client of d with burnWorkers workers of no-op mail
// jobs, and a channel closed once they have worked n.
func burnClient[TTx any](b *testing.B, d driver.Driver[TTx], n int) (*sluice.Client[TTx], <-chan struct{}) {
	var worked atomic.Int64
	finished := make(chan struct{})
	c, err := sluice.NewClient(d, &sluice.Config{
		Workers: mailWorkers(func(context.Context, *sluice.Job[mailArgs]) error {
			if worked.Add(1) == int64(n) {
				close(finished)
			}
			return nil
		}),
		Queues:     map[string]sluice.QueueConfig{sluice.QueueDefault: {MaxWorkers: burnWorkers}},
		ChangeFeed: sluice.ChangeFeedConfig{Linger: -1},
		Logger:     quiet,
	})
	if err != nil {
		b.Fatal(err)
	}
	return c, finished
}

// burnEnqueue enqueues n mail jobs, in statements of up to 5,000, and
// returns their IDs.
func burnEnqueue[TTx any](b *testing.B, c *sluice.Client[TTx], n int) []string {
	ids := make([]string, 0, n)
	for len(ids) < n {
		params := make([]sluice.EnqueueParams, min(n-len(ids), 5000))
		for i := range params {
			params[i] = sluice.EnqueueParams{Args: mailArgs{To: "a@example.com"}}
		}
		var res []sluice.EnqueueResult
		if err := retry(func() (err error) {
			res, err = c.EnqueueMany(context.Background(), params)
			return err
		}); err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			ids = append(ids, r.Job.ID)
		}
	}
	return ids
}

// retry calls fn until it succeeds, up to 100 times 50 ms apart, and
// returns its last error: the database may be shared with other work,
// which can take all of its connections for a moment.
func retry(fn func() error) error {
	var err error
	for range 100 {
		if err = fn(); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

// startGets starts two GET loops (getLoop) on the server at base; stop
// stops them and returns the latencies of the GETs answered 200, and how
// many were not.
func startGets(base string) (stop func() ([]time.Duration, int64)) {
	done := make(chan struct{})
	var gets []time.Duration
	var errs atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			lat := getLoop(base, done, &errs)
			mu.Lock()
			gets = append(gets, lat...)
			mu.Unlock()
		})
	}
	return func() ([]time.Duration, int64) {
		close(done)
		wg.Wait()
		return gets, errs.Load()
	}
}

// getLoop sends GET api/jobs?limit=50 and GET api/queues in turn to the
// server at base, one every getEvery (or as soon as the one before has
// been answered, if later), until stop is closed, and returns the
// latencies of those answered 200; it counts the others in errs.
func getLoop(base string, stop <-chan struct{}, errs *atomic.Int64) []time.Duration {
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(getEvery)
	defer tick.Stop()
	var lat []time.Duration
	for i := 0; ; i++ {
		select {
		case <-stop:
			return lat
		case <-tick.C:
		}
		path := "/api/jobs?limit=50"
		if i%2 == 1 {
			path = "/api/queues"
		}
		t0 := time.Now()
		res, err := client.Get(base + path)
		if err == nil {
			_, err = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
		}
		if err != nil || res.StatusCode != http.StatusOK {
			errs.Add(1)
			continue
		}
		lat = append(lat, time.Since(t0))
	}
}

// readersEnv, set, makes the test binary the readers' process of
// BenchmarkEventStreams (see readersMain).
const readersEnv = "SLUICEWEB_BENCH_READERS"

// readersMain opens the event streams whose URLs stdin lists, one a line
// until an empty one, each on a connection of its own, and prints "open"
// once all have answered. It reads them as fast as they come until stdin
// ends, then prints "bytes" and how many it read, and "cpu" and the CPU
// time in nanoseconds it used meanwhile. The readers run in a
// process of their own so that the benchmark's process's CPU time is the
// server's; they still share the machine's cores with it.
func readersMain() int {
	in := bufio.NewScanner(os.Stdin)
	var conns []net.Conn
	var read atomic.Int64
	var wg sync.WaitGroup
	for in.Scan() && in.Text() != "" {
		conn, br, err := openStream(in.Text())
		if err != nil {
			fmt.Fprintln(os.Stderr, "readers:", err)
			return 1
		}
		conns = append(conns, conn)
		wg.Go(func() {
			buf := make([]byte, 64<<10)
			for {
				n, err := br.Read(buf)
				read.Add(int64(n))
				if err != nil {
					return
				}
			}
		})
	}
	fmt.Println("open")
	cpu0 := processCPU()
	for in.Scan() {
	}
	for _, c := range conns {
		_ = c.Close()
	}
	wg.Wait()
	fmt.Println("bytes", read.Load(), "cpu", int64(processCPU()-cpu0))
	return 0
}

// openStream opens the event stream at url on a connection of its own and
// reads its answer's head.
func openStream(url string) (net.Conn, *bufio.Reader, error) {
	addr, path, _ := strings.Cut(strings.TrimPrefix(url, "http://"), "/")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(conn, "GET /%s HTTP/1.1\r\nHost: sluice\r\nAccept: text/event-stream\r\n\r\n", path)
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err == nil && res.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", path, res.Status)
	}
	if err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	return conn, br, nil
}

// streamReaders is the readers' process, reading event streams.
type streamReaders struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

// startReaders starts the readers' process on the streams at urls, once
// all have answered.
func startReaders(b *testing.B, urls []string) *streamReaders {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), readersEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	rs := &streamReaders{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	if _, err := io.WriteString(stdin, strings.Join(urls, "\n")+"\n\n"); err != nil {
		b.Fatal(err)
	}
	if !rs.out.Scan() || rs.out.Text() != "open" {
		b.Fatalf("the readers did not open their streams: %q", rs.out.Text())
	}
	return rs
}

// close ends the readers' process and returns the bytes its streams
// received and the CPU time it used; a nil rs received none.
func (rs *streamReaders) close(b *testing.B) (int64, time.Duration) {
	if rs == nil {
		return 0, 0
	}
	_ = rs.stdin.Close()
	var n int64
	var cpu time.Duration
	if rs.out.Scan() {
		_, _ = fmt.Sscanf(rs.out.Text(), "bytes %d cpu %d", &n, &cpu)
	}
	if err := rs.cmd.Wait(); err != nil {
		b.Fatalf("the readers: %v", err)
	}
	return n, cpu
}

// percentile returns the p-th quantile of ds (0 < p <= 1).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// benchLog writes to a benchmark's log.
type benchLog struct{ b *testing.B }

func (l benchLog) Write(p []byte) (int, error) {
	l.b.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// processCPU returns the CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
