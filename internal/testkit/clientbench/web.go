package clientbench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluiceweb"
)

// serve serves a sluiceweb handler over c on a loopback TCP server, and
// returns its base URL and an HTTP client keeping up to conns connections
// alive.
func serve[TTx any](b *testing.B, c *sluice.Client[TTx], conns int) (string, *http.Client) {
	b.Helper()
	h, err := sluiceweb.New(c, &sluiceweb.Options{Authorize: sluiceweb.AllowAll, Logger: discard})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	b.Cleanup(h.Close)
	tr := &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}
	b.Cleanup(tr.CloseIdleConnections)
	return srv.URL, &http.Client{Transport: tr}
}

// EnqueueHTTP enqueues one job per request, b.N times, through POST
// api/jobs of a sluiceweb handler on a loopback TCP server, from
// goroutines goroutines with a keep-alive connection each, and reports
// jobs/s and the process's CPU time per job (the load generator's
// included). Each goroutine writes its requests and reads the answers with
// net/http's own ReadResponse on a connection of its own: a load generator
// that costs the cores it shares with the server little, as one on another
// machine would cost them nothing.
func EnqueueHTTP[TTx any](b *testing.B, d driver.Driver[TTx], goroutines int) {
	c := Client(b, d, nil)
	base, _ := serve(b, c, goroutines)
	b.ResetTimer()
	cpu0 := cpuTime()
	b.ReportMetric(enqueueHTTPRate(b, base, goroutines, int64(b.N)), "jobs/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu_us/job")
}

// EnqueueHTTPVersusDirect compares, reps times in alternating order, n
// enqueues through HTTP (as EnqueueHTTP) with n direct Enqueue calls, both
// from goroutines goroutines on the same client, and reports the median
// jobs/s of each and the ratio of the medians (HTTP over direct): on a
// machine whose load drifts, the ratio of runs side by side.
func EnqueueHTTPVersusDirect[TTx any](b *testing.B, d driver.Driver[TTx], goroutines, n, reps int) {
	c := Client(b, d, nil)
	base, _ := serve(b, c, goroutines)
	var direct, overHTTP []float64
	for b.Loop() {
		for i := range reps {
			for _, useHTTP := range []bool{i%2 == 1, i%2 == 0} {
				if useHTTP {
					overHTTP = append(overHTTP, enqueueHTTPRate(b, base, goroutines, int64(n)))
				} else {
					direct = append(direct, enqueueRate(b, c, goroutines, int64(n)))
				}
			}
		}
	}
	b.ReportMetric(median(direct), "jobs/s_direct")
	b.ReportMetric(median(overHTTP), "jobs/s_http")
	b.ReportMetric(median(overHTTP)/median(direct), "http/direct")
}

// enqueueHTTPRate enqueues n jobs through the handler at base from
// goroutines connections and returns jobs/s.
func enqueueHTTPRate(b *testing.B, base string, goroutines int, n int64) float64 {
	host := strings.TrimPrefix(base, "http://")
	var next atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			if err := postJobs(host, &next, n); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

// postJobs enqueues jobs over one keep-alive connection to host until next
// passes n.
func postJobs(host string, next *atomic.Int64, n int64) error {
	conn, err := net.Dial("tcp", host)
	if err != nil {
		return err
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	var req bytes.Buffer
	for i := next.Add(1); i <= n; i = next.Add(1) {
		body := `{"topic": "bench", "payload": {"n": ` + strconv.FormatInt(i, 10) + `}}`
		req.Reset()
		fmt.Fprintf(&req, "POST /api/jobs HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			host, len(body), body)
		if _, err := conn.Write(req.Bytes()); err != nil {
			return err
		}
		res, err := http.ReadResponse(r, nil)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if err != nil {
			return err
		}
		if res.StatusCode != http.StatusCreated {
			return fmt.Errorf("POST api/jobs: %s", res.Status)
		}
	}
	return nil
}

// inspectHTTP runs GET requests of the API over c, whose table the caller
// filled as InspectMix says, and reports their mean and 95th percentile
// in ms.
func inspectHTTP[TTx any](b *testing.B, c *sluice.Client[TTx]) {
	base, hc := serve(b, c, 1)
	for _, r := range []struct{ name, path string }{
		{"HTTP/List/Newest", "/api/jobs?order=newest&limit=50"},
		{"HTTP/List/Failed", "/api/jobs?statuses=failed&order=newest&limit=50"},
		{"HTTP/List/TopicPending", "/api/jobs?topics=topic_5&statuses=pending&limit=50"},
		{"HTTP/Stats/All", "/api/jobs/stats"},
		{"HTTP/Stats/Topic", "/api/jobs/stats?topics=topic_3"},
	} {
		b.Run(r.name, func(b *testing.B) {
			measureP95(b, func(ctx context.Context) error {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+r.path, nil)
				if err != nil {
					return err
				}
				res, err := hc.Do(req)
				if err != nil {
					return err
				}
				defer res.Body.Close()
				if _, err := io.Copy(io.Discard, res.Body); err != nil {
					return err
				}
				if res.StatusCode != http.StatusOK {
					return fmt.Errorf("GET %s: %s", r.path, res.Status)
				}
				return nil
			})
		})
	}
}

// measureP95 runs fn b.N times and reports the mean and 95th percentile of
// its time, in ms.
func measureP95(b *testing.B, fn func(ctx context.Context) error) {
	ctx := context.Background()
	var times []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := fn(ctx); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(t0))
	}
	slices.Sort(times)
	var sum time.Duration
	for _, t := range times {
		sum += t
	}
	b.ReportMetric(ms(sum/time.Duration(len(times))), "ms/op")
	b.ReportMetric(ms(times[(len(times)*95+99)/100-1]), "p95_ms")
}

// Feed measures what a client's change feed costs the database with subs
// event streams open on a sluiceweb handler, while another client works
// jobs enqueued at a steady rate: it reports the driver calls the
// handler's client made per second (all of them the feed's reads) and
// per feed interval, over window (a second under SLUICE_BENCH_SMALL).
func Feed[TTx any](b *testing.B, d driver.Driver[TTx], subs int, window time.Duration) {
	if Small() {
		window = time.Second
	}
	calls := &atomic.Int64{}
	interval := 100 * time.Millisecond
	c, err := sluice.NewClient(countingDriver[TTx]{Driver: d, calls: calls}, &sluice.Config{Logger: discard,
		ChangeFeed: sluice.ChangeFeedConfig{Interval: interval, Linger: -1}})
	if err != nil {
		b.Fatal(err)
	}
	worker := client(b, d, func(context.Context, *sluice.Job[Args]) error { return nil }, 0)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	if err := worker.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer worker.Stop(context.Background())
	base, hc := serve(b, c, subs)
	var events atomic.Int64
	var wg sync.WaitGroup
	for range subs {
		opened := make(chan struct{})
		wg.Go(func() { stream(ctx, b, hc, base, opened, &events) })
		<-opened
	}
	for b.Loop() {
		before := calls.Load()
		start := time.Now()
		for time.Since(start) < window {
			if _, err := worker.Enqueue(ctx, Args{N: 1}, nil); err != nil {
				b.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		n := float64(calls.Load() - before)
		b.ReportMetric(n/time.Since(start).Seconds(), "db_calls/s")
		b.ReportMetric(n/float64(time.Since(start)/interval), "db_calls/tick")
	}
	stop()
	wg.Wait()
	b.ReportMetric(float64(events.Load())/float64(subs), "events/sub")
}

// stream reads an event stream until ctx ends, counting its events; it
// closes opened once the stream is open.
func stream(ctx context.Context, b *testing.B, hc *http.Client, base string, opened chan struct{}, events *atomic.Int64) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/events", nil)
	if err != nil {
		b.Error(err)
		close(opened)
		return
	}
	res, err := hc.Do(req)
	close(opened)
	if err != nil {
		b.Error(err)
		return
	}
	defer res.Body.Close()
	lines := bufio.NewScanner(res.Body)
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), "event: ") {
			events.Add(1)
		}
	}
}

// countingDriver is a driver whose executor counts its calls.
type countingDriver[TTx any] struct {
	driver.Driver[TTx]
	calls *atomic.Int64
}

func (d countingDriver[TTx]) Executor() driver.Executor {
	return countingExecutor{Executor: d.Driver.Executor(), calls: d.calls}
}

// countingExecutor counts the calls of the methods a client makes that is
// never started: reads, enqueues and actions.
type countingExecutor struct {
	driver.Executor
	calls *atomic.Int64
}

func (e countingExecutor) JobChanges(ctx context.Context, p *driver.JobChangesParams) (*driver.JobChanges, error) {
	e.calls.Add(1)
	return e.Executor.JobChanges(ctx, p)
}

func (e countingExecutor) JobGet(ctx context.Context, p *driver.JobGetParams) (*driver.JobRow, error) {
	e.calls.Add(1)
	return e.Executor.JobGet(ctx, p)
}

func (e countingExecutor) JobList(ctx context.Context, p *driver.JobListParams) (*driver.JobListResult, error) {
	e.calls.Add(1)
	return e.Executor.JobList(ctx, p)
}

func (e countingExecutor) JobStats(ctx context.Context, p *driver.JobStatsParams) (*driver.JobStats, error) {
	e.calls.Add(1)
	return e.Executor.JobStats(ctx, p)
}
