package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/bench/harness"
)

// scenario is one row of the comparison on one driver.
type scenario struct {
	name  string
	group string // the -scenario name that selects it
	spec  harness.Spec
	// metrics are the figures the scenario reports, besides rss_mib.
	metrics []string
}

// allDrivers are the drivers, in the order they run.
var allDrivers = []string{"pg", "sqlite"}

// Systems, in the order they run within a repetition.
var systemsByDriver = map[string][]string{
	"pg":     {"sluice", "river", "graphile-worker", "pg-boss", "asynq", "asynq-rdb", "raw", "raw-delete"},
	"sqlite": {"sluice", "river", "backlite", "raw", "raw-delete"},
}

// variants are sluice with its observability features on, on either
// driver, run only when -system names them and reported as shares of plain
// sluice's figures rather than as rivals: one log line per job
// (sluice-logged), sluiceotel's tracing and metrics with one log line per
// job (sluice-traced), and the OpenTelemetry SDK's own calls for each job
// in a middleware of a few lines (sluice-floor). River's counterparts,
// river-logged and river-traced, are River's own features to the same
// ends, on Postgres alone, reported as shares of plain River. Each maps to
// the child program it lives in, so that no plain system's program links
// a feature. One more variant, sluice-delete, deletes each completed job
// as it completes (Retention.Completed = KeepNone) where plain sluice
// keeps it; it is compared with the rivals too (see rivalVariants).
var variants = map[string]string{
	"sluice-logged": "sluice",
	"sluice-traced": "sluiceotel",
	"sluice-floor":  "sluiceotel",
	"sluice-delete": "sluice",
	"river-logged":  "riverlog",
	"river-traced":  "riverotel",
}

// variantNames are the variants, in the order they run.
var variantNames = []string{"sluice-logged", "sluice-traced", "sluice-floor", "sluice-delete", "river-logged", "river-traced"}

// rivalVariants are the variants of sluice that also get ratios to every
// rival: sluice with completed jobs deleted matches the semantics of a
// queue that deletes a job when it succeeds (graphile-worker), so like is
// compared with like as well as with sluice as it ships.
var rivalVariants = []string{"sluice-delete"}

// counterparts name, for a variant of a rival, sluice's variant with the
// same features: the RATIO line sluice_vs=<variant> compares the two.
var counterparts = map[string]string{
	"river-logged": "sluice-logged",
	"river-traced": "sluice-traced",
}

// pgOnly are the variants with no program on SQLite: River on SQLite is an
// older River, in a module of its own.
var pgOnly = []string{"river-logged", "river-traced"}

// plainOf returns the system a variant is a variant of: the part of its
// name before the first hyphen.
func plainOf(variant string) string {
	plain, _, _ := strings.Cut(variant, "-")
	return plain
}

// systemsFor returns the systems of a driver that f selects: every rival
// when f is empty, and the variants only when f names them.
func systemsFor(f filter, driver string) []string {
	out := f.selected(systemsByDriver[driver])
	if len(f) > 0 {
		for _, v := range f.selected(variantNames) {
			if driver == "pg" || !slices.Contains(pgOnly, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

// knownSystems are the systems of every driver, then the variants: the
// names -system takes.
func knownSystems() []string {
	var out []string
	for _, driver := range allDrivers {
		for _, s := range systemsByDriver[driver] {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return append(out, variantNames...)
}

// sizes are the scenario sizes of one run.
type sizes struct {
	backlog, finished     int
	burnWindow            time.Duration
	single1, single16     int
	many                  int
	enqueueWindow         time.Duration
	slowSamples, fastJobs int
}

// sizesFor returns the sizes for a driver: the full ones in a full run, each
// count and window multiplied by scale, and ones that keep the whole quick
// run under two minutes.
func sizesFor(driver string, quick bool, scale float64) sizes {
	if quick {
		s := sizes{
			backlog: 10_000, finished: 20_000, burnWindow: 2 * time.Second,
			single1: 1_000, single16: 2_000, many: 10_000, enqueueWindow: 2 * time.Second,
			slowSamples: 6, fastJobs: 250,
		}
		if driver == "sqlite" {
			s.backlog = 5_000
		}
		return s
	}
	s := sizes{
		backlog: 1_000_000, finished: 1_000_000, burnWindow: time.Minute,
		single1: 20_000, single16: 50_000, many: 300_000, enqueueWindow: 30 * time.Second,
		slowSamples: 240, fastJobs: 10_000,
	}
	if driver == "sqlite" {
		s.backlog, s.single1, s.single16 = 200_000, 50_000, 100_000
	}
	if scale != 1 {
		for _, n := range []*int{&s.backlog, &s.finished, &s.single1, &s.single16, &s.many, &s.slowSamples, &s.fastJobs} {
			*n = max(1, int(float64(*n)*scale))
		}
		for _, d := range []*time.Duration{&s.burnWindow, &s.enqueueWindow} {
			*d = max(time.Second, time.Duration(float64(*d)*scale))
		}
	}
	return s
}

// scenariosFor lists every scenario on a driver, in the order they run.
func scenariosFor(driver string, quick bool, scale float64) []scenario {
	z := sizesFor(driver, quick, scale)
	throughput := []string{"jobs_per_s"}
	latency := []string{"p50_ms", "p99_ms"}
	burn := func(name string, tuned bool, finished int) scenario {
		return scenario{name: name, group: name, metrics: throughput, spec: harness.Spec{
			Kind: harness.KindBurnDown, Tuned: tuned, Backlog: z.backlog, Finished: finished, Window: z.burnWindow,
		}}
	}
	return []scenario{
		burn("burn_down", true, 0),
		burn("default_config", false, 0),
		{name: "enqueue_single_1", group: "enqueue_single", metrics: throughput, spec: harness.Spec{
			Kind: harness.KindEnqueue, Jobs: z.single1, Goroutines: 1, Window: z.enqueueWindow,
		}},
		{name: "enqueue_single_16", group: "enqueue_single", metrics: throughput, spec: harness.Spec{
			Kind: harness.KindEnqueue, Jobs: z.single16, Goroutines: 16, Window: z.enqueueWindow,
		}},
		{name: "enqueue_many", group: "enqueue_many", metrics: throughput, spec: harness.Spec{
			Kind: harness.KindEnqueueMany, Jobs: z.many, Batch: 1_000, Window: z.enqueueWindow,
		}},
		{name: "latency_250ms", group: "latency", metrics: latency, spec: harness.Spec{
			Kind: harness.KindLatency, Jobs: z.slowSamples, Gap: 250 * time.Millisecond,
		}},
		{name: "latency_500ps", group: "latency", metrics: latency, spec: harness.Spec{
			Kind: harness.KindLatency, Jobs: z.fastJobs, Gap: 2 * time.Millisecond,
		}},
		burn("bloat", true, z.finished),
	}
}

// filter is a comma-separated list of names; empty selects everything.
type filter []string

func newFilter(s string) filter {
	var f filter
	for name := range strings.SplitSeq(s, ",") {
		if name = strings.TrimSpace(name); name != "" {
			f = append(f, name)
		}
	}
	return f
}

// match reports whether any of names is selected.
func (f filter) match(names ...string) bool {
	if len(f) == 0 {
		return true
	}
	for _, n := range names {
		if slices.Contains(f, n) {
			return true
		}
	}
	return false
}

// selected returns the names of all that f selects, in their order.
func (f filter) selected(all []string) []string {
	var out []string
	for _, s := range all {
		if f.match(s) {
			out = append(out, s)
		}
	}
	return out
}

// check returns an error naming the first of f's names that is not known.
func (f filter) check(known []string) error {
	for _, name := range f {
		if !slices.Contains(known, name) {
			return fmt.Errorf("unknown name %q; known: %s", name, strings.Join(known, ", "))
		}
	}
	return nil
}

// higherIsBetter reports whether a larger figure is the better one.
func higherIsBetter(metric string) bool { return metric == "jobs_per_s" }
