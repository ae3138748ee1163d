package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

func TestParseFlags(t *testing.T) {
	t.Parallel()
	o, err := parseFlags([]string{"-driver", "sqlite", "-batch", "100, 1000", "-conns", "1"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.drivers, " ") != "sqlite" || len(o.batches) != 2 || o.batches[1] != 1000 ||
		len(o.conns) != 1 || o.reps != 1 || o.scale != 0 || len(o.compareArgs) != 0 {
		t.Errorf("options: %+v", o)
	}
	for _, bad := range [][]string{{"-batch", "0"}, {"-conns", "x"}, {"-reps", "0"}, {"-scale", "-1"}, {"extra"}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q) succeeded", bad)
		}
	}
}

func TestParseBench(t *testing.T) {
	t.Parallel()
	out := "# noise\n" +
		"BENCH system=raw driver=pg scenario=burn_down metric=jobs_per_s value=81234\n" +
		"BENCH system=raw driver=pg scenario=burn_down metric=rss_mib value=14.20\n" +
		"BENCH system=raw-delete driver=pg scenario=burn_down metric=jobs_per_s value=n/a\n" +
		"RATIO driver=pg scenario=burn_down metric=jobs_per_s sluice_vs=raw value=0.5000\n"
	got := parseBench([]byte(out))
	if len(got) != 2 || got["raw jobs_per_s"] != 81234 || got["raw rss_mib"] != 14.2 {
		t.Errorf("parseBench = %v", got)
	}
}

// TestSweep runs a sweep of one point per driver, tiny, through the
// comparison program against real databases.
func TestSweep(t *testing.T) {
	t.Parallel()
	o, err := parseFlags([]string{"-batch", "100", "-conns", "2", "-scale", "0.002"})
	if err != nil {
		t.Fatal(err)
	}
	o.dir = "../.."
	var out, log bytes.Buffer
	if err := run(t.Context(), o, &out, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var want []*regexp.Regexp
	for _, driver := range []string{"pg", "sqlite"} {
		want = append(want,
			regexp.MustCompile(`^SWEEP driver=`+driver+` system=raw batch=100 conns=2 jobs_per_s=\d+ rss_mib=[\d.]+$`),
			regexp.MustCompile(`^SWEEP driver=`+driver+` system=raw-delete batch=100 conns=2 jobs_per_s=\d+ rss_mib=[\d.]+$`),
			regexp.MustCompile(`^BEST driver=`+driver+` system=raw batch=100 conns=2 jobs_per_s=\d+$`),
			regexp.MustCompile(`^BEST driver=`+driver+` system=raw-delete batch=100 conns=2 jobs_per_s=\d+$`))
	}
	if len(lines) != len(want) {
		t.Fatalf("printed\n%s", out.String())
	}
	for i, re := range want {
		if !re.MatchString(lines[i]) {
			t.Errorf("line %q does not match %s", lines[i], re)
		}
	}
}
