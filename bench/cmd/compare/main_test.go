package main

import (
	"bytes"
	"errors"
	"math"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/bench/harness"
)

func TestPrintRatiosSayWhetherSluiceIsBetter(t *testing.T) {
	t.Parallel()
	med := map[string]float64{
		"sluice jobs_per_s": 3000, "river jobs_per_s": 1000, "backlite jobs_per_s": 6000,
		"sluice p99_ms": 2, "river p99_ms": 20, "backlite p99_ms": 1,
		"sluice rss_mib": 20, "river rss_mib": 30, "backlite rss_mib": 0,
	}
	var out bytes.Buffer
	printRatios(&out, "sqlite", "x", []string{"jobs_per_s", "p99_ms", "rss_mib"}, []string{"sluice", "river", "backlite"}, med)
	want := strings.Join([]string{
		"RATIO driver=sqlite scenario=x metric=jobs_per_s sluice_vs=river value=3.00",
		"RATIO driver=sqlite scenario=x metric=jobs_per_s sluice_vs=backlite value=0.5000",
		"RATIO driver=sqlite scenario=x metric=p99_ms sluice_vs=river value=10.00",
		"RATIO driver=sqlite scenario=x metric=p99_ms sluice_vs=backlite value=0.5000",
		"RATIO driver=sqlite scenario=x metric=rss_mib sluice_vs=river value=1.50",
		"RATIO driver=sqlite scenario=x metric=rss_mib sluice_vs=backlite value=0.0000",
		"",
	}, "\n")
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}

	out.Reset()
	printRatios(&out, "pg", "x", []string{"jobs_per_s"}, []string{"river"}, med)
	if out.Len() != 0 {
		t.Errorf("ratios without sluice: %q", out.String())
	}
}

func TestPrintSharesGiveVariantsOverPlainSluice(t *testing.T) {
	t.Parallel()
	med := map[string]float64{
		"sluice jobs_per_s": 20000, "sluice-traced jobs_per_s": 17000, "river jobs_per_s": 9000,
		"sluice p99_ms": 2, "sluice-traced p99_ms": 3,
	}
	var out bytes.Buffer
	printShares(&out, "pg", "burn_down", []string{"jobs_per_s", "p99_ms"}, []string{"sluice", "river", "sluice-traced"}, med)
	want := "SHARE driver=pg scenario=burn_down metric=jobs_per_s system=sluice-traced of=sluice value=0.8500\n" +
		"SHARE driver=pg scenario=burn_down metric=p99_ms system=sluice-traced of=sluice value=1.50\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}

	// A variant is no rival: it has no ratio of its own.
	out.Reset()
	printRatios(&out, "pg", "burn_down", []string{"jobs_per_s"}, []string{"sluice", "river", "sluice-traced"}, med)
	if got := out.String(); got != "RATIO driver=pg scenario=burn_down metric=jobs_per_s sluice_vs=river value=2.22\n" {
		t.Errorf("ratios with a variant: %q", got)
	}

	// sluice-delete is also measured against the rivals, marked as such.
	med["sluice-delete jobs_per_s"] = 27000
	out.Reset()
	printRatios(&out, "pg", "burn_down", []string{"jobs_per_s"}, []string{"sluice", "river", "sluice-delete"}, med)
	want = "RATIO driver=pg scenario=burn_down metric=jobs_per_s sluice_vs=river value=2.22\n" +
		"RATIO driver=pg scenario=burn_down metric=jobs_per_s sluice_vs=river value=3.00 variant=sluice-delete\n"
	if got := out.String(); got != want {
		t.Errorf("ratios with sluice-delete: got\n%s\nwant\n%s", got, want)
	}

	out.Reset()
	printShares(&out, "pg", "burn_down", []string{"jobs_per_s"}, []string{"sluice-traced"}, med)
	if out.Len() != 0 {
		t.Errorf("shares without plain sluice: %q", out.String())
	}
}

func TestVariantsOfRiverFaceSluicesAndShareRivers(t *testing.T) {
	t.Parallel()
	med := map[string]float64{
		"sluice jobs_per_s": 20000, "river jobs_per_s": 10000,
		"sluice-traced jobs_per_s": 15000, "river-traced jobs_per_s": 5000,
		"sluice-logged jobs_per_s": 18000, "river-logged jobs_per_s": 8000,
	}
	systems := []string{"sluice", "river", "sluice-logged", "sluice-traced", "river-logged", "river-traced"}
	var out bytes.Buffer
	printRatios(&out, "pg", "burn_down", []string{"jobs_per_s"}, systems, med)
	printShares(&out, "pg", "burn_down", []string{"jobs_per_s"}, systems, med)
	want := strings.Join([]string{
		"RATIO driver=pg scenario=burn_down metric=jobs_per_s sluice_vs=river value=2.00",
		"RATIO driver=pg scenario=burn_down metric=jobs_per_s sluice_vs=river-logged value=2.25",
		"RATIO driver=pg scenario=burn_down metric=jobs_per_s sluice_vs=river-traced value=3.00",
		"SHARE driver=pg scenario=burn_down metric=jobs_per_s system=sluice-logged of=sluice value=0.9000",
		"SHARE driver=pg scenario=burn_down metric=jobs_per_s system=sluice-traced of=sluice value=0.7500",
		"SHARE driver=pg scenario=burn_down metric=jobs_per_s system=river-logged of=river value=0.8000",
		"SHARE driver=pg scenario=burn_down metric=jobs_per_s system=river-traced of=river value=0.5000",
		"",
	}, "\n")
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}

	// Each ratio and share needs both of its systems, and no more.
	out.Reset()
	only := []string{"sluice-traced", "river-traced", "river-logged"}
	printRatios(&out, "pg", "burn_down", []string{"jobs_per_s"}, only, med)
	printShares(&out, "pg", "burn_down", []string{"jobs_per_s"}, only, med)
	if got := out.String(); got != "RATIO driver=pg scenario=burn_down metric=jobs_per_s sluice_vs=river-traced value=3.00\n" {
		t.Errorf("variants alone: %q", got)
	}
}

func TestSystemsForRunsVariantsOnlyWhenNamed(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ flag, want string }{
		{"", "sluice river backlite raw raw-delete"},
		{"river,sluice", "sluice river"},
		{"sluice,sluice-traced,sluice-floor", "sluice sluice-traced sluice-floor"},
		{"sluice-logged", "sluice-logged"},
		{"river,river-traced,river-logged", "river"}, // River's variants run on Postgres alone
	} {
		if got := strings.Join(systemsFor(newFilter(c.flag), "sqlite"), " "); got != c.want {
			t.Errorf("-system %q runs %q, want %q", c.flag, got, c.want)
		}
	}
	if got := strings.Join(systemsFor(newFilter("river-traced,sluice-traced,river"), "pg"), " "); got != "river sluice-traced river-traced" {
		t.Errorf("-system river-traced,sluice-traced,river runs %q on Postgres", got)
	}
	// The systems on Node run on Postgres alone, by default too.
	if got := strings.Join(systemsFor(nil, "pg"), " "); got != "sluice river graphile-worker pg-boss asynq asynq-rdb raw raw-delete" {
		t.Errorf("Postgres runs %q", got)
	}
	if got := systemsFor(newFilter("pg-boss"), "sqlite"); len(got) != 0 {
		t.Errorf("-system pg-boss runs %q on SQLite", got)
	}
}

func TestParseFigures(t *testing.T) {
	t.Parallel()
	spec := &harness.Spec{System: "river", Driver: "pg", Scenario: "latency_250ms"}
	out := "noise\n" +
		"BENCH system=river driver=pg scenario=latency_250ms metric=p50_ms value=1.50\n" +
		"BENCH system=sluice driver=pg scenario=latency_250ms metric=p50_ms value=9\n" +
		"BENCH system=river driver=pg scenario=latency_250ms metric=p99_ms value=12\n"
	m, err := parseFigures([]byte(out), spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || m["p50_ms"] != 1.5 || m["p99_ms"] != 12 {
		t.Errorf("parseFigures = %v", m)
	}
	for _, bad := range []string{"", "BENCH system=river driver=pg scenario=latency_250ms metric=p50_ms value=x\n"} {
		if _, err := parseFigures([]byte(bad), spec); err == nil {
			t.Errorf("parseFigures(%q) succeeded", bad)
		}
	}
	if _, err := parseFigures([]byte("UNSUPPORTED system=river driver=pg scenario=latency_250ms\n"), spec); !errors.Is(err, harness.ErrUnsupported) {
		t.Errorf("parseFigures of an unsupported measurement: %v", err)
	}
}

// TestRatiosToAnUnsupportedSystem checks that a system that cannot do a
// scenario, whose medians are NaN, gets ratios that say so.
func TestRatiosToAnUnsupportedSystem(t *testing.T) {
	t.Parallel()
	med := map[string]float64{"sluice p50_ms": 2, "raw p50_ms": math.NaN()}
	var out bytes.Buffer
	printRatios(&out, "pg", "latency_250ms", []string{"p50_ms"}, []string{"sluice", "raw"}, med)
	if got, want := out.String(), "RATIO driver=pg scenario=latency_250ms metric=p50_ms sluice_vs=raw value=n/a\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestFilter(t *testing.T) {
	t.Parallel()
	f := newFilter(" latency, burn_down ,")
	for name, want := range map[string]bool{"latency": true, "burn_down": true, "bloat": false} {
		if got := f.match(name); got != want {
			t.Errorf("match(%q) = %v", name, got)
		}
	}
	if !f.match("latency_250ms", "latency") {
		t.Error("a group name does not select its scenarios")
	}
	if !newFilter("").match("anything") {
		t.Error("an empty filter does not select everything")
	}
}

func TestScenarios(t *testing.T) {
	t.Parallel()
	full := scenariosFor("pg", false, 1)
	names := make([]string, len(full))
	for i, sc := range full {
		names[i] = sc.name
	}
	if got := strings.Join(names, " "); got != "burn_down default_config enqueue_single_1 enqueue_single_16 enqueue_many latency_250ms latency_500ps bloat" {
		t.Errorf("scenarios: %s", got)
	}
	if full[0].spec.Backlog != 1_000_000 || full[7].spec.Finished != 1_000_000 || !full[0].spec.Tuned || full[1].spec.Tuned {
		t.Errorf("Postgres burn-down: %+v, bloat: %+v", full[0].spec, full[7].spec)
	}
	if got := scenariosFor("sqlite", false, 1)[0].spec.Backlog; got != 200_000 {
		t.Errorf("SQLite backlog %d", got)
	}
	small := sizesFor("pg", false, 0.001)
	if small.backlog != 1000 || small.burnWindow != time.Second || small.slowSamples != 1 {
		t.Errorf("scaled sizes: %+v", small)
	}
	if q := sizesFor("pg", true, 0.001); q != sizesFor("pg", true, 1) {
		t.Error("-scale changed the quick sizes")
	}
}

func TestParseFlags(t *testing.T) {
	t.Setenv("SLUICE_TEST_DATABASE_URL", "")
	o, err := parseFlags([]string{"-quick", "-scenario", "latency_250ms,enqueue_single", "-system", "backlite", "-driver", "sqlite"})
	if err != nil {
		t.Fatal(err)
	}
	if o.reps != 1 || o.dbURL != defaultDatabaseURL || o.childLimit != 2*time.Minute {
		t.Errorf("quick options: %+v", o)
	}
	t.Setenv("SLUICE_TEST_DATABASE_URL", "postgres://elsewhere/db")
	if o, err = parseFlags(nil); err != nil || o.reps != 3 || o.dbURL != "postgres://elsewhere/db" {
		t.Errorf("full options: %+v, %v", o, err)
	}
	if _, err := parseFlags([]string{"-system", "sluice,raw,raw-delete", "-driver", "pg"}); err != nil {
		t.Errorf("the ceiling: %v", err)
	}
	if _, err := parseFlags([]string{"-system", "sluice,sluice-logged,sluice-traced,sluice-floor,river-logged,river-traced"}); err != nil {
		t.Errorf("the variants of sluice: %v", err)
	}
	if _, err := parseFlags([]string{"-system", "asynq,asynq-rdb", "-driver", "pg"}); err != nil {
		t.Errorf("systems of Postgres alone: %v", err)
	}
	if _, err := parseFlags([]string{"-system", "sluice,graphile-worker,pg-boss", "-driver", "pg"}); err != nil {
		t.Errorf("the systems on Node: %v", err)
	}
	for _, bad := range [][]string{{"-reps", "-1"}, {"-scale", "0"}, {"extra"}, {"-nope"},
		{"-scenario", "latency,nope"}, {"-system", "sluice,oban"}, {"-driver", "mysql"}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q) succeeded", bad)
		}
	}
}

// TestChildProgramsLinkOneSystem checks that each child program links its
// own system and driver and no other, so that the memory measured in it is
// that system's; and that only the variants that need OpenTelemetry link it.
func TestChildProgramsLinkOneSystem(t *testing.T) {
	t.Parallel()
	const (
		sluiceMod   = "github.com/sluicehq/sluice"
		riverMod    = "github.com/riverqueue/river"
		backliteMod = "github.com/mikestefanello/backlite"
		pgxMod      = "github.com/jackc/pgx/v5"
		sqliteMod   = "modernc.org/sqlite"
		otelMod     = "go.opentelemetry.io/otel"
		otelRiver   = "github.com/riverqueue/rivercontrib/otelriver"
		asynqMod    = "github.com/hibiken/asynq"
		redisMod    = "github.com/redis/go-redis/v9"
	)
	want := map[string][]string{
		"sluice-pg":         {sluiceMod, pgxMod},
		"sluice-sqlite":     {sluiceMod, sqliteMod},
		"sluiceotel-pg":     {sluiceMod, pgxMod, otelMod},
		"sluiceotel-sqlite": {sluiceMod, sqliteMod, otelMod},
		"river-pg":          {riverMod, pgxMod},
		"riverlog-pg":       {riverMod, pgxMod},
		"riverotel-pg":      {riverMod, pgxMod, otelMod, otelRiver},
		"backlite-sqlite":   {backliteMod, sqliteMod},
		"asynq-redis":       {asynqMod, redisMod},
		"raw-pg":            {pgxMod},
		"raw-sqlite":        {sqliteMod},
	}
	for _, driver := range allDrivers {
		all := newFilter(strings.Join(append(slices.Clone(systemsByDriver[driver]), variantNames...), ","))
		for _, system := range systemsFor(all, driver) {
			if slices.Contains(nodeSystems, system) {
				continue // not a Go program: TestNodeSystems runs it
			}
			if p := program(system, driver); p != riverSQLite && want[p] == nil {
				t.Errorf("no expectation for the child program %s", p)
			}
		}
	}
	for prog, mods := range want {
		pkg := "github.com/sluicehq/sluice/bench/" + childrenDir + "/" + prog
		out, err := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		var got []string
		for m := range strings.FieldsSeq(string(out)) {
			if slices.Contains([]string{sluiceMod, riverMod, backliteMod, pgxMod, sqliteMod, otelMod, otelRiver, asynqMod, redisMod}, m) && !slices.Contains(got, m) {
				got = append(got, m)
			}
		}
		slices.Sort(got)
		slices.Sort(mods)
		if !slices.Equal(got, mods) {
			t.Errorf("%s links %v, want %v", prog, got, mods)
		}
	}
}
