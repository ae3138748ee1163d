// Package harness runs one measurement of one job queue and prints its
// figures. It is shared by the comparison program and by the child programs
// it runs, one per system and driver, among them the River-on-SQLite
// program, which lives in a module of its own because River's SQLite driver
// is published only for an older River; so it depends on the standard
// library alone.
//
// A measurement runs in a child process of its own, in two phases: prepare
// (create the schema and insert the backlog) and measure (work or enqueue,
// and print the figures). The parent reads the measuring process's peak
// resident set size from the kernel when it exits, so each figure of memory
// belongs to one system and one scenario, and the memory the backlog took to
// build is not counted. Each child program links its own system and driver
// alone, so no other system's code or package initialization counts either.
package harness

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Kinds of measurement a Spec asks for.
const (
	// KindBurnDown works a pre-inserted backlog.
	KindBurnDown = "burn_down"
	// KindEnqueue enqueues jobs one at a time from Spec.Goroutines goroutines.
	KindEnqueue = "enqueue"
	// KindEnqueueMany enqueues jobs in batches of Spec.Batch.
	KindEnqueueMany = "enqueue_many"
	// KindLatency enqueues jobs at a fixed rate into a running client and
	// measures the time from the start of each enqueue to the start of its
	// worker.
	KindLatency = "latency"
)

// Spec says what one child process measures. The parent writes it as JSON
// into the -spec flag.
type Spec struct {
	System   string `json:"system"`
	Driver   string `json:"driver"`
	Scenario string `json:"scenario"`
	Kind     string `json:"kind"`
	// DB is the Postgres URL or the SQLite file's path.
	DB string `json:"db"`
	// Schema is the Postgres schema the system works in; the parent creates
	// and drops it.
	Schema string `json:"schema,omitempty"`
	// Tuned selects the system's throughput settings rather than its
	// defaults.
	Tuned bool `json:"tuned"`
	// Backlog is the number of pending jobs inserted before a burn-down;
	// Finished the number of finished jobs inserted before them.
	Backlog  int `json:"backlog,omitempty"`
	Finished int `json:"finished,omitempty"`
	// Jobs is the number of jobs to enqueue (or latency samples to take).
	Jobs       int `json:"jobs,omitempty"`
	Goroutines int `json:"goroutines,omitempty"`
	Batch      int `json:"batch,omitempty"`
	// Window bounds the measured phase: it ends when the work is done or
	// the window has passed, whichever is first.
	Window time.Duration `json:"window"`
	// Gap is the time between two latency samples' enqueues.
	Gap time.Duration `json:"gap,omitempty"`
}

// System is one job queue on one fresh database. Job numbers given to
// Enqueue and EnqueueMany come back to the work function passed to Open.
type System interface {
	// Migrate creates the system's schema.
	Migrate(ctx context.Context) error
	// InsertFinished inserts n jobs that are already finished, as the
	// system would leave them.
	InsertFinished(ctx context.Context, n int) error
	// Open builds the client: with the system's throughput settings when
	// tuned, its defaults otherwise. work (nil for an insert-only client) is
	// called with each job's number when the job starts.
	Open(ctx context.Context, tuned bool, work func(n int64)) error
	// Start starts working jobs; Stop stops, letting running jobs finish.
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	// Enqueue enqueues one job, committed when it returns.
	Enqueue(ctx context.Context, n int64) error
	// EnqueueMany enqueues jobs first to first+size-1 with the system's
	// fastest batch insert.
	EnqueueMany(ctx context.Context, first int64, size int) error
	// Remaining counts the jobs that are not finished.
	Remaining(ctx context.Context) (int64, error)
	// Close releases the database.
	Close() error
}

// Factory builds the System a Spec names, bound to its database.
type Factory func(ctx context.Context, spec *Spec) (System, error)

// backlogBatch is how many jobs one bulk insert of the backlog carries.
const backlogBatch = 5000

// ChildMain runs one phase of one measurement as the process's main
// function, with args (without the program name) holding -phase and -spec,
// and writes the figures to out. factories are keyed by "system/driver".
func ChildMain(ctx context.Context, args []string, out io.Writer, factories map[string]Factory) error {
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	phase := fs.String("phase", "", "prepare or measure")
	specJSON := fs.String("spec", "", "the Spec, as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var spec Spec
	if err := json.Unmarshal([]byte(*specJSON), &spec); err != nil {
		return fmt.Errorf("child: spec: %w", err)
	}
	factory, ok := factories[spec.System+"/"+spec.Driver]
	if !ok {
		return fmt.Errorf("child: no system %s on %s here", spec.System, spec.Driver)
	}
	if *phase != "prepare" && *phase != "measure" {
		return fmt.Errorf("child: unknown phase %q", *phase)
	}
	err := runPhase(ctx, factory, *phase, &spec, out)
	if errors.Is(err, ErrUnsupported) {
		// The measuring phase says so; the parent records it.
		if *phase == "measure" {
			fmt.Fprintln(out, UnsupportedLine(spec.System, spec.Driver, spec.Scenario))
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s %s/%s %s: %w", *phase, spec.System, spec.Driver, spec.Scenario, err)
	}
	return nil
}

// ErrUnsupported is returned, wrapped or not, by a Factory or a System's
// method when the system cannot do the measurement a Spec asks for: a
// queue with no way to wake its workers has no enqueue-to-start latency,
// for one. ChildMain then prints UnsupportedLine instead of figures and
// succeeds, and the comparison reports the scenario as not applicable to
// that system.
var ErrUnsupported = errors.New("the system cannot do this measurement")

// UnsupportedLine is what a child prints for a measurement its system
// cannot do.
func UnsupportedLine(system, driver, scenario string) string {
	return fmt.Sprintf("UNSUPPORTED system=%s driver=%s scenario=%s", system, driver, scenario)
}

// runPhase builds the system and runs one phase of spec on it.
func runPhase(ctx context.Context, factory Factory, phase string, spec *Spec, out io.Writer) error {
	sys, err := factory(ctx, spec)
	if err != nil {
		return err
	}
	defer sys.Close()
	if phase == "prepare" {
		return prepare(ctx, sys, spec)
	}
	if path := os.Getenv(CPUProfileEnv); path != "" {
		stop, err := startCPUProfile(path)
		if err != nil {
			return err
		}
		defer stop()
	}
	return measure(ctx, sys, spec, out)
}

// CPUProfileEnv names the environment variable that, set to a file's
// path, makes a Go child program write the CPU profile of its measure
// phase there (go tool pprof reads it): where a system's client spends
// its time per job.
const CPUProfileEnv = "SLUICE_BENCH_CPUPROFILE"

// startCPUProfile starts profiling into a new file at path and returns
// the function that stops and closes it.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// prepare creates the schema, then inserts the finished jobs and the
// backlog.
func prepare(ctx context.Context, sys System, spec *Spec) error {
	if err := sys.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if spec.Finished > 0 {
		if err := sys.InsertFinished(ctx, spec.Finished); err != nil {
			return fmt.Errorf("insert finished jobs: %w", err)
		}
	}
	if spec.Backlog == 0 {
		return nil
	}
	if err := sys.Open(ctx, false, nil); err != nil {
		return err
	}
	for first := 0; first < spec.Backlog; first += backlogBatch {
		if err := sys.EnqueueMany(ctx, int64(first), min(backlogBatch, spec.Backlog-first)); err != nil {
			return fmt.Errorf("insert backlog: %w", err)
		}
	}
	return nil
}

// Figure is one measured value, printed as a BENCH line.
type Figure struct {
	Metric string
	Value  float64
}

// measure runs the Spec's measurement and prints its figures.
func measure(ctx context.Context, sys System, spec *Spec, out io.Writer) error {
	var figs []Figure
	var err error
	switch spec.Kind {
	case KindBurnDown:
		figs, err = burnDown(ctx, sys, spec)
	case KindEnqueue:
		figs, err = enqueue(ctx, sys, spec)
	case KindEnqueueMany:
		figs, err = enqueueMany(ctx, sys, spec)
	case KindLatency:
		figs, err = latency(ctx, sys, spec)
	default:
		err = fmt.Errorf("unknown kind %q", spec.Kind)
	}
	if err != nil {
		return err
	}
	for _, f := range figs {
		fmt.Fprintln(out, BenchLine(spec.System, spec.Driver, spec.Scenario, f.Metric, f.Value))
	}
	return nil
}

// BenchLine formats one figure.
func BenchLine(system, driver, scenario, metric string, value float64) string {
	return fmt.Sprintf("BENCH system=%s driver=%s scenario=%s metric=%s value=%s",
		system, driver, scenario, metric, FormatValue(value))
}

// FormatValue formats a figure with enough digits for a ratio and no
// exponent; NaN, the figure of a system that cannot do a scenario and of
// any ratio to it, is "n/a".
func FormatValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.4f", v)
	}
}

// burnDown works the backlog until it is gone or the window has passed. The
// figure counts the jobs the database holds as finished after Stop,
// divided by the time from Start to the end of Stop; a second figure,
// worked, is that count itself, which lets a test see that a small
// backlog was drained whole.
func burnDown(ctx context.Context, sys System, spec *Spec) ([]Figure, error) {
	var worked atomic.Int64
	all := make(chan struct{})
	target := int64(spec.Backlog)
	err := sys.Open(ctx, spec.Tuned, func(int64) {
		if worked.Add(1) == target {
			close(all)
		}
	})
	if err != nil {
		return nil, err
	}
	before, err := sys.Remaining(ctx)
	if err != nil {
		return nil, err
	}
	timer := time.NewTimer(spec.Window)
	defer timer.Stop()
	start := time.Now()
	if err := sys.Start(ctx); err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	select {
	case <-all:
	case <-timer.C:
	}
	if err := stop(ctx, sys); err != nil {
		return nil, err
	}
	elapsed := time.Since(start)
	after, err := sys.Remaining(ctx)
	if err != nil {
		return nil, err
	}
	done := before - after
	if done <= 0 {
		return nil, fmt.Errorf("no job finished in %s", elapsed)
	}
	return []Figure{{"jobs_per_s", float64(done) / elapsed.Seconds()}, {"worked", float64(done)}}, nil
}

// stopTimeout bounds Stop: running jobs are no-ops.
const stopTimeout = time.Minute

func stop(ctx context.Context, sys System) error {
	ctx, cancel := context.WithTimeout(ctx, stopTimeout)
	defer cancel()
	if err := sys.Stop(ctx); err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	return nil
}

// enqueue enqueues spec.Jobs jobs one at a time from spec.Goroutines
// goroutines, or as many as the window allows.
func enqueue(ctx context.Context, sys System, spec *Spec) ([]Figure, error) {
	if err := sys.Open(ctx, false, nil); err != nil {
		return nil, err
	}
	var next, done atomic.Int64
	deadline := time.Now().Add(spec.Window)
	var wg sync.WaitGroup
	errs := make([]error, spec.Goroutines)
	start := time.Now()
	for g := range spec.Goroutines {
		wg.Go(func() {
			for n := next.Add(1); n <= int64(spec.Jobs) && time.Now().Before(deadline); n = next.Add(1) {
				if err := sys.Enqueue(ctx, n); err != nil {
					errs[g] = err
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return []Figure{{"jobs_per_s", float64(done.Load()) / elapsed.Seconds()}}, nil
}

// enqueueMany enqueues spec.Jobs jobs in batches of spec.Batch, or as many
// batches as the window allows.
func enqueueMany(ctx context.Context, sys System, spec *Spec) ([]Figure, error) {
	if err := sys.Open(ctx, false, nil); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(spec.Window)
	start := time.Now()
	done := 0
	for done < spec.Jobs && time.Now().Before(deadline) {
		size := min(spec.Batch, spec.Jobs-done)
		if err := sys.EnqueueMany(ctx, int64(done), size); err != nil {
			return nil, err
		}
		done += size
	}
	return []Figure{{"jobs_per_s", float64(done) / time.Since(start).Seconds()}}, nil
}

// latencyWait bounds the wait for the last samples' jobs to start.
const latencyWait = 30 * time.Second

// latency enqueues spec.Jobs jobs into a running client, one every
// spec.Gap on a fixed schedule, and reports the median and 99th percentile
// of the time from the start of each enqueue to the start of its job. One
// job enqueued and worked beforehand makes sure the client is running.
func latency(ctx context.Context, sys System, spec *Spec) ([]Figure, error) {
	n := spec.Jobs
	enqueued := make([]time.Time, n+1)
	startedAt := make([]atomic.Int64, n+1)
	var count atomic.Int64
	all := make(chan struct{})
	err := sys.Open(ctx, false, func(i int64) {
		if i < 0 || i > int64(n) || !startedAt[i].CompareAndSwap(0, time.Now().UnixNano()) {
			return
		}
		if count.Add(1) == int64(n)+1 {
			close(all)
		}
	})
	if err != nil {
		return nil, err
	}
	if err := sys.Start(ctx); err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	// Job 0 warms the client up and is not a sample.
	if err := sys.Enqueue(ctx, 0); err != nil {
		return nil, err
	}
	for startedAt[0].Load() == 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		time.Sleep(time.Millisecond)
	}
	begin := time.Now()
	for i := 1; i <= n; i++ {
		if wait := time.Until(begin.Add(time.Duration(i-1) * spec.Gap)); wait > 0 {
			time.Sleep(wait)
		}
		enqueued[i] = time.Now()
		if err := sys.Enqueue(ctx, int64(i)); err != nil {
			return nil, err
		}
	}
	select {
	case <-all:
	case <-time.After(latencyWait):
		return nil, fmt.Errorf("%d of %d jobs did not start within %s", int64(n)+1-count.Load(), n, latencyWait)
	}
	if err := stop(ctx, sys); err != nil {
		return nil, err
	}
	lat := make([]float64, 0, n)
	for i := 1; i <= n; i++ {
		lat = append(lat, float64(startedAt[i].Load()-enqueued[i].UnixNano())/float64(time.Millisecond))
	}
	return []Figure{{"p50_ms", Percentile(lat, 50)}, {"p99_ms", Percentile(lat, 99)}}, nil
}

// Percentile returns the p-th percentile of values (nearest rank), or 0
// for none.
func Percentile(values []float64, p float64) float64 {
	if len(values) == 0 {
		return 0
	}
	s := slices.Clone(values)
	slices.Sort(s)
	rank := int(float64(len(s))*p/100+0.999999) - 1
	return s[max(0, min(rank, len(s)-1))]
}

// Exit prints err, if any, to stderr and exits with status 1, else 0.
func Exit(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}
