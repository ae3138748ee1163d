// Command compare measures sluice side by side with River (Postgres and
// SQLite), graphile-worker and pg-boss (Postgres, on Node), backlite
// (SQLite), asynq (Redis, in the Postgres tables, on a Redis server it
// starts for each measurement) and the ceiling of plain SQL (both) on this
// machine, in one run, and prints one line per figure and the ratios:
//
//	BENCH system=<system> driver=<pg|sqlite> scenario=<name> metric=<jobs_per_s|p50_ms|p99_ms|rss_mib> value=<number|n/a>
//	RATIO driver=<pg|sqlite> scenario=<name> metric=<metric> sluice_vs=<system> value=<number|n/a> [variant=sluice-delete]
//	SHARE driver=<pg|sqlite> scenario=<name> metric=<metric> system=<variant> of=<sluice|river> value=<number>
//
// A ratio above 1 means sluice is better: sluice/other for throughput,
// other/sluice for latency and memory; against a variant of River it is
// sluice's variant with the same features (sluice-logged against
// river-logged, sluice-traced against river-traced); against raw and
// raw-delete, the ceiling of plain SQL with no queue logic, it is the
// fraction of the ceiling sluice reaches. A system that cannot do a
// scenario has n/a for its figures and ratios. A share is a variant
// (with observability features on, run when -system names it) over the
// plain system. With -chart it also draws the head-to-head figures into
// an SVG image, and with -from it redraws one from a saved output instead
// of running. Run it from the bench directory;
// bench/README.md describes the scenarios, the flags and how each system is
// set up.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/bench/harness"
)

const defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

type options struct {
	quick      bool
	scale      float64
	reps       int
	scenarios  filter
	systems    filter
	drivers    filter
	dbURL      string
	riverDir   string
	childLimit time.Duration
	chart      string // the SVG file to draw the results into
	chartTitle string
	from       string // a saved output to chart instead of running
	budget     bool   // add the per-job budget to burn-downs on Postgres
}

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	opts, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := run(ctx, opts, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	var o options
	var scenarios, systemNames, drivers string
	dbURL := os.Getenv("SLUICE_TEST_DATABASE_URL")
	if dbURL == "" {
		dbURL = defaultDatabaseURL
	}
	fs.BoolVar(&o.quick, "quick", false, "small sizes and one repetition: every scenario in under two minutes")
	fs.Float64Var(&o.scale, "scale", 1, "multiply the full run's job counts and windows by this (to try the full run small); ignored with -quick")
	fs.IntVar(&o.reps, "reps", 0, "repetitions of each scenario per system; the median is reported (default 3, or 1 with -quick)")
	fs.StringVar(&scenarios, "scenario", "", "comma-separated scenarios to run (burn_down, default_config, enqueue_single, enqueue_many, latency, bloat, or a full name such as latency_250ms); default all")
	fs.StringVar(&systemNames, "system", "", "comma-separated systems to run (sluice, river, graphile-worker, pg-boss, backlite, asynq, asynq-rdb, raw, raw-delete, or the variants sluice-logged, sluice-traced, sluice-floor, sluice-delete, and on Postgres river-logged, river-traced); default all but the variants")
	fs.StringVar(&drivers, "driver", "", "comma-separated drivers to run (pg, sqlite); default both")
	fs.StringVar(&o.dbURL, "database-url", dbURL, "Postgres URL; every system works in a schema of its own there (default $SLUICE_TEST_DATABASE_URL, else "+defaultDatabaseURL+")")
	fs.StringVar(&o.riverDir, "riversqlite", "riversqlite", "directory of the River-on-SQLite module")
	fs.DurationVar(&o.childLimit, "child-timeout", 0, "bound on each measurement's processes (default 2m with -quick, 30m otherwise)")
	fs.BoolVar(&o.budget, "budget", false, "add to each burn-down on Postgres the cost per job: statements (with pg_stat_statements loaded), transactions, WAL bytes, server and client CPU µs")
	fs.StringVar(&o.chart, "chart", "", "draw the run's head-to-head figures into this SVG file")
	fs.StringVar(&o.chartTitle, "chart-title", defaultChartTitle, "the chart's title, such as the machine and date of the run")
	fs.StringVar(&o.from, "from", "", "with -chart: draw the BENCH lines of this saved standard output of a run (- for standard input) and run nothing")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("compare: unexpected arguments %q", fs.Args())
	}
	if o.reps < 0 {
		return nil, fmt.Errorf("compare: -reps must be positive")
	}
	if o.scale <= 0 {
		return nil, fmt.Errorf("compare: -scale must be positive")
	}
	if o.from != "" && o.chart == "" {
		return nil, fmt.Errorf("compare: -from needs -chart, the file to draw into")
	}
	if o.reps == 0 {
		o.reps = 3
		if o.quick {
			o.reps = 1
		}
	}
	if o.childLimit == 0 {
		o.childLimit = 30 * time.Minute
		if o.quick {
			o.childLimit = 2 * time.Minute
		}
	}
	o.scenarios, o.systems, o.drivers = newFilter(scenarios), newFilter(systemNames), newFilter(drivers)
	var scenarioNames []string
	for _, sc := range scenariosFor("pg", true, 1) {
		for _, n := range []string{sc.group, sc.name} {
			if !slices.Contains(scenarioNames, n) {
				scenarioNames = append(scenarioNames, n)
			}
		}
	}
	for _, check := range []struct {
		flag  string
		f     filter
		known []string
	}{
		{"-scenario", o.scenarios, scenarioNames},
		{"-system", o.systems, knownSystems()},
		{"-driver", o.drivers, allDrivers},
	} {
		if err := check.f.check(check.known); err != nil {
			return nil, fmt.Errorf("compare: %s: %w", check.flag, err)
		}
	}
	return &o, nil
}

// run runs every selected scenario for every selected system, writing the
// figures to out and progress to log.
func run(ctx context.Context, o *options, out, log io.Writer) error {
	if o.from != "" {
		return chartFrom(o.chart, o.chartTitle, o.from)
	}
	var results bytes.Buffer
	if o.chart != "" {
		out = io.MultiWriter(out, &results)
	}
	tmp, err := os.MkdirTemp("", "sluice-compare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	r := &runner{
		dbURL: o.dbURL, tmp: tmp, limit: o.childLimit,
		schema: fmt.Sprintf("sluice_compare_%d", os.Getpid()),
		logf:   func(format string, args ...any) { fmt.Fprintf(log, "# "+format+"\n", args...) },
	}
	defer func() {
		if r.admin != nil {
			_ = r.admin.Close(context.Background())
		}
	}()
	start := time.Now()
	var programs []string
	onNode := false
	for _, driver := range o.drivers.selected(allDrivers) {
		for _, system := range systemsFor(o.systems, driver) {
			if slices.Contains(nodeSystems, system) {
				onNode = true
				continue
			}
			if slices.Contains(programs, program(system, driver)) {
				continue
			}
			programs = append(programs, program(system, driver))
		}
	}
	if onNode {
		if err := r.findNode(nodeDir); err != nil {
			return err
		}
	}
	if err := r.build(ctx, programs, o.riverDir); err != nil {
		return err
	}
	for _, driver := range o.drivers.selected(allDrivers) {
		systemList := systemsFor(o.systems, driver)
		if len(systemList) == 0 {
			continue
		}
		if driver == "pg" {
			conn, err := pgx.Connect(ctx, r.dbURL)
			if err != nil {
				return fmt.Errorf("connect to Postgres (-database-url): %w", err)
			}
			r.admin = conn
			if r.budget = o.budget; r.budget {
				if r.statements = r.checkStatements(ctx); !r.statements {
					r.logf("budget: the server does not load pg_stat_statements, so statements per job are n/a")
				}
			}
		}
		if err := runDriver(ctx, r, o, driver, systemList, out); err != nil {
			return err
		}
	}
	r.logf("done in %s", time.Since(start).Round(time.Second))
	if o.chart != "" {
		if err := writeChart(o.chart, o.chartTitle, &results); err != nil {
			return err
		}
		r.logf("chart written to %s", o.chart)
	}
	return nil
}

// runDriver runs one driver's scenarios, alternating systems within each
// repetition, and prints each scenario's medians and ratios when it ends.
func runDriver(ctx context.Context, r *runner, o *options, driver string, systemList []string, out io.Writer) error {
	medians := map[string]map[string]float64{} // scenario -> "system metric" -> median
	for _, sc := range scenariosFor(driver, o.quick, o.scale) {
		if !o.scenarios.match(sc.name, sc.group) {
			continue
		}
		figures := map[string]map[string][]float64{} // system -> metric -> values
		unsupported := map[string]bool{}             // systems that cannot do sc
		for rep := 1; rep <= o.reps; rep++ {
			for _, system := range systemList {
				began := time.Now()
				m, err := r.measure(ctx, driver, system, &sc)
				if errors.Is(err, harness.ErrUnsupported) {
					r.logf("%s %s rep %d/%d %s: unsupported", driver, sc.name, rep, o.reps, system)
					unsupported[system] = true
					continue
				}
				if err != nil {
					return err
				}
				r.logf("%s %s rep %d/%d %s: %v (%s)", driver, sc.name, rep, o.reps, system, m, time.Since(began).Round(time.Millisecond))
				if figures[system] == nil {
					figures[system] = map[string][]float64{}
				}
				for k, v := range m {
					figures[system][k] = append(figures[system][k], v)
				}
			}
		}
		med := map[string]float64{}
		metrics := append(slices.Clone(sc.metrics), "rss_mib")
		if o.budget && budgetApplies(&harness.Spec{Kind: sc.spec.Kind, Driver: driver}) {
			metrics = append(metrics, budgetMetrics...)
		}
		for _, system := range systemList {
			for _, metric := range metrics {
				v := harness.Percentile(figures[system][metric], 50)
				if unsupported[system] {
					v = math.NaN() // printed n/a, as is any ratio or share to it
				}
				med[system+" "+metric] = v
				fmt.Fprintln(out, harness.BenchLine(system, driver, sc.name, metric, v))
			}
		}
		medians[sc.name] = med
		printRatios(out, driver, sc.name, metrics, systemList, med)
		printShares(out, driver, sc.name, sc.metrics, systemList, med)
		// The bloat target compares sluice with its own clean burn-down.
		if clean, ok := medians["burn_down"]["sluice jobs_per_s"]; sc.name == "bloat" && ok && clean > 0 {
			if bloat, ok := med["sluice jobs_per_s"]; ok {
				fmt.Fprintln(out, ratioLine(driver, sc.name, "jobs_per_s", "sluice", bloat/clean))
			}
		}
	}
	return nil
}

// printRatios prints, for each metric, sluice's ratio to every rival, and
// each variant of a rival's to sluice's variant with the same features
// (counterparts), where both ran; then, marked variant=<name>, each of
// rivalVariants' ratio to every rival.
func printRatios(out io.Writer, driver, scenario string, metrics, systemList []string, med map[string]float64) {
	for _, metric := range metrics {
		for _, other := range systemList {
			ours := "sluice"
			if _, variant := variants[other]; variant {
				ours = counterparts[other]
			}
			if other == "sluice" || !slices.Contains(systemList, ours) {
				continue
			}
			printRatio(out, driver, scenario, metric, ours, other, "", med)
		}
	}
	for _, v := range rivalVariants {
		if !slices.Contains(systemList, v) {
			continue
		}
		for _, metric := range metrics {
			for _, other := range systemList {
				if _, variant := variants[other]; other != "sluice" && !variant {
					printRatio(out, driver, scenario, metric, v, other, " variant="+v, med)
				}
			}
		}
	}
}

// printRatio prints the RATIO line of ours against other, with suffix
// appended, unless other's figure is zero.
func printRatio(out io.Writer, driver, scenario, metric, ours, other, suffix string, med map[string]float64) {
	num, den := med[ours+" "+metric], med[other+" "+metric]
	if !higherIsBetter(metric) {
		num, den = den, num
	}
	if den != 0 {
		fmt.Fprintln(out, ratioLine(driver, scenario, metric, other, num/den)+suffix)
	}
}

// printShares prints each variant's figure over that of the plain system
// it is a variant of, for each metric but memory.
func printShares(out io.Writer, driver, scenario string, metrics, systemList []string, med map[string]float64) {
	for _, metric := range metrics {
		for _, v := range systemList {
			_, variant := variants[v]
			plain := plainOf(v)
			if !variant || !slices.Contains(systemList, plain) || med[plain+" "+metric] == 0 {
				continue
			}
			fmt.Fprintf(out, "SHARE driver=%s scenario=%s metric=%s system=%s of=%s value=%s\n",
				driver, scenario, metric, v, plain, harness.FormatValue(med[v+" "+metric]/med[plain+" "+metric]))
		}
	}
}

func ratioLine(driver, scenario, metric, other string, v float64) string {
	return fmt.Sprintf("RATIO driver=%s scenario=%s metric=%s sluice_vs=%s value=%s",
		driver, scenario, metric, other, harness.FormatValue(v))
}
