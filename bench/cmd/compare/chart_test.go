package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sampleOutput is a run's standard output as the chart reads it, with
// systems the comparison may add besides its own, lines that are not
// figures, and a system with no figure in one panel.
const sampleOutput = `BENCH system=sluice driver=pg scenario=burn_down metric=jobs_per_s value=61000
BENCH system=river driver=pg scenario=burn_down metric=jobs_per_s value=29000
BENCH system=graphile-worker driver=pg scenario=burn_down metric=jobs_per_s value=12500
BENCH system=sluice-traced driver=pg scenario=burn_down metric=jobs_per_s value=40000
BENCH system=river-traced driver=pg scenario=burn_down metric=jobs_per_s value=15000
BENCH system=sluice driver=pg scenario=burn_down metric=rss_mib value=44.9
RATIO driver=pg scenario=burn_down metric=jobs_per_s sluice_vs=river value=2.10
SHARE driver=pg scenario=burn_down metric=jobs_per_s system=sluice-traced of=sluice value=0.6557
BENCH system=sluice driver=pg scenario=latency_500ps metric=p50_ms value=1.5
BENCH system=sluice driver=pg scenario=latency_500ps metric=p99_ms value=4.25
BENCH system=river driver=pg scenario=latency_500ps metric=p99_ms value=120
BENCH system=graphile-worker driver=pg scenario=latency_500ps metric=p99_ms value=3.9
BENCH system=sluice driver=sqlite scenario=burn_down metric=jobs_per_s value=38800
BENCH system=backlite driver=sqlite scenario=burn_down metric=jobs_per_s value=1070
BENCH system=raw driver=sqlite scenario=burn_down metric=jobs_per_s value=90000
BENCH system=raw-delete driver=sqlite scenario=burn_down metric=jobs_per_s value=95000
BENCH system=sluice driver=sqlite scenario=bloat metric=jobs_per_s value=30000
`

// svgDoc is what the test reads back from the chart.
type svgDoc struct {
	XMLName xml.Name `xml:"svg"`
	Rects   []struct {
		Title string  `xml:"title"`
		Fill  string  `xml:"fill,attr"`
		Width float64 `xml:"width,attr"`
	} `xml:"rect"`
	Texts []struct {
		Text   string `xml:",chardata"`
		Weight string `xml:"font-weight,attr"`
	} `xml:"text"`
}

func TestDrawChartDrawsEachPanelsBars(t *testing.T) {
	t.Parallel()
	figs, err := parseBench(strings.NewReader("# progress\n" + sampleOutput))
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != 15 || figs[2] != (figure{"graphile-worker", "pg", "burn_down", "jobs_per_s", 12500}) {
		t.Fatalf("parseBench: %d figures, the third %+v", len(figs), figs[2])
	}
	svg, err := drawChart(figs, `2 cores & "noise" <shared>`)
	if err != nil {
		t.Fatal(err)
	}
	var doc svgDoc
	if err := xml.Unmarshal([]byte(svg), &doc); err != nil {
		t.Fatalf("the chart is not XML: %v\n%s", err, svg)
	}

	// One bar per figure of a panel, in the order the systems first
	// appear; the longest bar is the largest figure.
	var bars []string
	widths := map[string]float64{}
	fills := map[string]string{}
	for _, r := range doc.Rects {
		if r.Title != "" {
			bars = append(bars, r.Title)
			widths[r.Title], fills[r.Title] = r.Width, r.Fill
		}
	}
	want := []string{
		"sluice 61,000", "river 29,000", "graphile-worker 12,500", "sluice-traced 40,000", "river-traced 15,000",
		"sluice 38,800", "backlite 1,070", "raw 90,000", "raw-delete 95,000",
		"sluice 4.25 ms", "river 120 ms", "graphile-worker 3.90 ms",
	}
	if !slices.Equal(bars, want) {
		t.Errorf("bars:\n%q\nwant\n%q", bars, want)
	}
	if !(widths["sluice 61,000"] > widths["sluice-traced 40,000"] && widths["sluice-traced 40,000"] > widths["river 29,000"]) {
		t.Errorf("bar widths do not follow the figures: %v", widths)
	}
	for title, fill := range map[string]string{
		"sluice 61,000": kindColors[kindSluice], "sluice-traced 40,000": kindColors[kindSluiceVariant],
		"graphile-worker 12,500": kindColors[kindOther], "river-traced 15,000": kindColors[kindOtherVariant],
		"raw-delete 95,000": kindColors[kindOtherVariant],
	} {
		if fills[title] != fill {
			t.Errorf("%s is drawn in %s, want %s", title, fills[title], fill)
		}
	}

	var texts, bold []string
	for _, tx := range doc.Texts {
		texts = append(texts, tx.Text)
		if tx.Weight == "bold" {
			bold = append(bold, tx.Text)
		}
	}
	for _, s := range []string{
		`2 cores & "noise" <shared>`, "Postgres", "SQLite",
		"burn_down: jobs/s", "latency_500ps: p99 latency, ms", "higher is better", "lower is better",
		"a variant of sluice", "their variants",
	} {
		if !slices.Contains(texts, s) {
			t.Errorf("no text %q in the chart", s)
		}
	}
	// The best figure of each panel is bold: the most jobs/s, the least
	// latency.
	for _, s := range []string{"61,000", "95,000", "3.90 ms"} {
		if !slices.Contains(bold, s) {
			t.Errorf("the best figure %s is not bold; bold: %q", s, bold)
		}
	}
	// A system of the driver with no figure in a panel says so: on
	// Postgres, sluice-traced and river-traced in latency_500ps; a panel
	// with no figure at all says so once.
	if n := strings.Count(svg, ">n/a<"); n != 2 {
		t.Errorf("%d systems not measured, want 2", n)
	}
	if n := strings.Count(svg, ">not measured on SQLite<"); n != 1 {
		t.Errorf("%d SQLite panels not measured, want 1", n)
	}
	// Only the chart's panels are drawn: bloat and rss_mib are not.
	if strings.Contains(svg, "bloat") || strings.Contains(svg, "44.9") {
		t.Error("the chart draws a figure it has no panel for")
	}
}

func TestChartInputErrors(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{
		"BENCH system=sluice driver=pg scenario=burn_down metric=jobs_per_s value=fast\n",
		"BENCH driver=pg scenario=burn_down metric=jobs_per_s value=1\n",
	} {
		if _, err := parseBench(strings.NewReader(bad)); err == nil {
			t.Errorf("parseBench(%q) succeeded", bad)
		}
	}
	figs, err := parseBench(strings.NewReader("RATIO x\nBENCH system=sluice driver=pg scenario=bloat metric=jobs_per_s value=1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drawChart(figs, "t"); err == nil {
		t.Error("a chart with no panel drawn")
	}
}

func TestFormatFigure(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		metric string
		v      float64
		want   string
	}{
		{"jobs_per_s", 999.6, "1,000"}, {"jobs_per_s", 61234, "61,234"}, {"jobs_per_s", 1234567, "1,234,567"},
		{"jobs_per_s", 12, "12"}, {"p99_ms", 931.2, "931 ms"}, {"p99_ms", 2345.6, "2,346 ms"}, {"p99_ms", 29.94, "29.9 ms"}, {"p50_ms", 1.5, "1.50 ms"},
	} {
		if got := formatFigure(c.metric, c.v); got != c.want {
			t.Errorf("formatFigure(%s, %v) = %q, want %q", c.metric, c.v, got, c.want)
		}
	}
}

// TestChartFromSavedOutput redraws a saved output through the program's
// own path, running nothing.
func TestChartFromSavedOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	saved, chart := filepath.Join(dir, "results.txt"), filepath.Join(dir, "chart.svg")
	if err := os.WriteFile(saved, []byte(sampleOutput), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := parseFlags([]string{"-chart", chart, "-from", saved, "-chart-title", "a machine"})
	if err != nil {
		t.Fatal(err)
	}
	if err := run(t.Context(), o, nil, nil); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(chart)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(svg), ">a machine<") || !strings.Contains(string(svg), "<title>sluice 61,000</title>") {
		t.Errorf("the chart lacks its title or a bar:\n%s", svg)
	}
	if _, err := parseFlags([]string{"-from", saved}); err == nil {
		t.Error("-from without -chart accepted")
	}
}
