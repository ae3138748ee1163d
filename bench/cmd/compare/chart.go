package main

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// figure is one BENCH line: one system's median of one metric.
type figure struct {
	system, driver, scenario, metric string
	value                            float64
}

// parseBench reads the BENCH lines of a run's standard output, in order,
// and skips every other line.
func parseBench(r io.Reader) ([]figure, error) {
	var figs []figure
	s := bufio.NewScanner(r)
	for n := 1; s.Scan(); n++ {
		rest, ok := strings.CutPrefix(s.Text(), "BENCH ")
		if !ok {
			continue
		}
		var f figure
		var value string
		for field := range strings.FieldsSeq(rest) {
			k, v, _ := strings.Cut(field, "=")
			switch k {
			case "system":
				f.system = v
			case "driver":
				f.driver = v
			case "scenario":
				f.scenario = v
			case "metric":
				f.metric = v
			case "value":
				value = v
			}
		}
		if value == "n/a" && f.system != "" {
			continue // the system cannot do the scenario: drawn as n/a
		}
		var err error
		if f.value, err = strconv.ParseFloat(value, 64); err != nil || f.system == "" || f.driver == "" || f.scenario == "" || f.metric == "" {
			return nil, fmt.Errorf("line %d: bad BENCH line %q", n, s.Text())
		}
		figs = append(figs, f)
	}
	return figs, s.Err()
}

// chartPanels are the figures the chart draws, in order, one panel per
// driver for each: the head-to-head throughputs and the latency tail.
var chartPanels = []struct{ scenario, metric string }{
	{"burn_down", "jobs_per_s"},
	{"enqueue_single_1", "jobs_per_s"},
	{"enqueue_single_16", "jobs_per_s"},
	{"enqueue_many", "jobs_per_s"},
	{"latency_250ms", "p99_ms"},
	{"latency_500ps", "p99_ms"},
}

// The chart's geometry, in pixels, and its font. Text widths are
// estimated from the font size, generously, since the reader's font is
// not known.
const (
	chartMargin    = 24
	chartColumnW   = 580
	chartColumnGap = 36
	chartBarH      = 20
	chartRowGap    = 8
	chartFont      = "DejaVu Sans, Verdana, Helvetica, Arial, sans-serif"
	chartCharW     = 0.62 // of the font size: the width of an average character
	chartTextSize  = 13
)

// textWidth estimates the width of s at the given font size.
func textWidth(s string, size float64) float64 {
	return float64(len([]rune(s))) * size * chartCharW
}

// chartLayout is what the chart draws, taken from the figures.
type chartLayout struct {
	drivers []string
	// systems are each driver's systems, in the order they first appear.
	systems map[string][]string
	values  map[[4]string]float64 // driver, scenario, metric, system
	rows    []int                 // the indexes of chartPanels with a figure
}

func layoutOf(figs []figure) *chartLayout {
	l := &chartLayout{systems: map[string][]string{}, values: map[[4]string]float64{}}
	for _, f := range figs {
		if !slices.Contains(l.drivers, f.driver) {
			l.drivers = append(l.drivers, f.driver)
		}
		if !slices.Contains(l.systems[f.driver], f.system) {
			l.systems[f.driver] = append(l.systems[f.driver], f.system)
		}
		l.values[[4]string{f.driver, f.scenario, f.metric, f.system}] = f.value
	}
	for i, p := range chartPanels {
		for _, f := range figs {
			if f.scenario == p.scenario && f.metric == p.metric {
				l.rows = append(l.rows, i)
				break
			}
		}
	}
	return l
}

// drawChart returns an SVG image of the figures' head-to-head panels: for
// each driver a column, for each of chartPanels with a figure a panel of
// horizontal bars, one per system in the order the systems first appear,
// each labelled with its value, sluice's in blue, the best value in bold.
func drawChart(figs []figure, title string) (string, error) {
	l := layoutOf(figs)
	if len(l.rows) == 0 {
		return "", fmt.Errorf("no figure to chart: no BENCH line of %s", chartScenarioNames())
	}
	var b strings.Builder
	// The label column fits the longest system name on every panel, so
	// that bars start at the same place down a column.
	labelW := 80.0
	for _, d := range l.drivers {
		for _, s := range l.systems[d] {
			labelW = max(labelW, textWidth(s, chartTextSize)+12)
		}
	}
	// The image is as wide as its columns, or its title and legend, in
	// bold type a tenth wider, where they are wider.
	width := max(2*chartMargin+len(l.drivers)*chartColumnW+(len(l.drivers)-1)*chartColumnGap,
		2*chartMargin+int(math.Ceil(1.1*textWidth(title, 22))), 2*chartMargin+int(math.Ceil(textWidth(legendNote, chartTextSize))))
	y := float64(chartMargin)
	var body strings.Builder
	text(&body, chartMargin, y+22, 22, "bold", "#111827", "start", title)
	y += 48
	legend(&body, chartMargin, y, l)
	y += 56
	for i, d := range l.drivers {
		x := float64(chartMargin + i*(chartColumnW+chartColumnGap))
		text(&body, x, y+18, 18, "bold", "#111827", "start", driverTitle(d))
	}
	y += 34
	for _, row := range l.rows {
		h := 0.0
		for i, d := range l.drivers {
			x := float64(chartMargin + i*(chartColumnW+chartColumnGap))
			h = max(h, drawPanel(&body, l, d, row, x, y, labelW))
		}
		y += h + 22
	}
	height := int(math.Ceil(y)) + chartMargin - 22
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="%s">`+"\n",
		width, height, width, height, chartFont)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	b.WriteString(body.String())
	b.WriteString("</svg>\n")
	return b.String(), nil
}

// drawPanel draws one driver's panel of chartPanels[row] at x, y and
// returns its height.
func drawPanel(b *strings.Builder, l *chartLayout, driver string, row int, x, y, labelW float64) float64 {
	p := chartPanels[row]
	higher := higherIsBetter(p.metric)
	heading, note := p.scenario+": jobs/s", "higher is better"
	if !higher {
		heading, note = p.scenario+": "+strings.TrimSuffix(p.metric, "_ms")+" latency, ms", "lower is better"
	}
	text(b, x, y+16, 15, "bold", "#111827", "start", heading)
	text(b, x+chartColumnW, y+16, 13, "italic", "#4b5563", "end", note)
	y += 28
	type bar struct {
		system string
		value  float64
		ok     bool
	}
	var bars []bar
	var top float64
	best := -1
	for _, s := range l.systems[driver] {
		v, ok := l.values[[4]string{driver, p.scenario, p.metric, s}]
		bars = append(bars, bar{s, v, ok})
		if !ok {
			continue
		}
		top = max(top, v)
		if i := len(bars) - 1; best < 0 || (higher && v > bars[best].value) || (!higher && v < bars[best].value) {
			best = i
		}
	}
	if best < 0 {
		text(b, x, y+chartBarH/2+4.5, chartTextSize, "italic", "#6b7280", "start", "not measured on "+driverTitle(driver))
		return 28 + chartBarH
	}
	// The longest bar leaves room for the longest value label after it.
	labelRoom := 0.0
	for _, br := range bars {
		if br.ok {
			// Bold text, the best figure's, is about a tenth wider.
			labelRoom = max(labelRoom, 1.1*textWidth(formatFigure(p.metric, br.value), chartTextSize)+10)
		}
	}
	barX := x + labelW
	maxW := x + chartColumnW - barX - labelRoom
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#9ca3af" stroke-width="1"/>`+"\n",
		barX, y-2, barX, y+float64(len(bars))*(chartBarH+chartRowGap)-chartRowGap+2)
	for i, br := range bars {
		mid := y + chartBarH/2 + 4.5 // the text's baseline, centred on the bar
		text(b, barX-8, mid, chartTextSize, "normal", "#111827", "end", br.system)
		if !br.ok {
			text(b, barX+8, mid, chartTextSize, "italic", "#6b7280", "start", "n/a")
		} else {
			w := 0.0
			if top > 0 {
				w = max(1, br.value/top*maxW)
			}
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s"><title>%s</title></rect>`+"\n",
				barX, y, w, chartBarH, kindColors[l.kind(br.system)], escape(br.system+" "+formatFigure(p.metric, br.value)))
			weight, label := "normal", formatFigure(p.metric, br.value)
			if i == best {
				weight = "bold"
			}
			text(b, barX+w+6, mid, chartTextSize, weight, "#111827", "start", label)
		}
		y += chartBarH + chartRowGap
	}
	return 28 + float64(len(bars))*(chartBarH+chartRowGap) - chartRowGap
}

// The kinds of bar, each with its colour and its name in the legend: a
// variant is a system named <system>-<something> after another system of
// the chart (plainOf), such as sluice-traced or river-traced.
const (
	kindSluice = iota
	kindSluiceVariant
	kindOther
	kindOtherVariant
)

var kindColors = [...]string{"#1d4ed8", "#7fa6f5", "#8b95a5", "#c9ced6"}
var kindNames = [...]string{"sluice", "a variant of sluice", "other systems", "their variants"}

// kind returns the kind of system's bar.
func (l *chartLayout) kind(system string) int {
	plain := plainOf(system)
	variant := plain != system && slices.ContainsFunc(l.drivers, func(d string) bool { return slices.Contains(l.systems[d], plain) })
	switch {
	case system == "sluice" || plain == "sluice" && !variant:
		return kindSluice
	case plain == "sluice":
		return kindSluiceVariant
	case variant:
		return kindOtherVariant
	}
	return kindOther
}

// legendNote is the legend's second line.
const legendNote = "Medians of one run; each panel has its own scale. Bold: the panel's best figure."

// legend says what the colours and the bold label mean, on two lines,
// naming only the kinds of bar the chart has.
func legend(b *strings.Builder, x, y float64, l *chartLayout) {
	var present [len(kindNames)]bool
	for _, d := range l.drivers {
		for _, s := range l.systems[d] {
			present[l.kind(s)] = true
		}
	}
	for k, name := range kindNames {
		if !present[k] {
			continue
		}
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="14" height="14" fill="%s"/>`+"\n", x, y, kindColors[k])
		text(b, x+20, y+12, chartTextSize, "normal", "#111827", "start", name)
		x += 20 + textWidth(name, chartTextSize) + 14
	}
	text(b, chartMargin, y+34, chartTextSize, "normal", "#374151", "start", legendNote)
}

// text writes one SVG text element.
func text(b *strings.Builder, x, y, size float64, style, fill, anchor, s string) {
	attr := `font-weight="` + style + `"`
	if style == "italic" {
		attr = `font-style="italic"`
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="%g" %s fill="%s" text-anchor="%s">%s</text>`+"\n",
		x, y, size, attr, fill, anchor, escape(s))
}

func escape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}

// formatFigure formats a value for a label: jobs/s as a whole number,
// latencies in ms with three significant digits, thousands separated.
func formatFigure(metric string, v float64) string {
	if !higherIsBetter(metric) {
		switch {
		case v >= 100:
			return thousands(v) + " ms"
		case v >= 10:
			return fmt.Sprintf("%.1f ms", v)
		default:
			return fmt.Sprintf("%.2f ms", v)
		}
	}
	return thousands(v)
}

// thousands formats v rounded to a whole number, with a comma between
// each group of three digits.
func thousands(v float64) string {
	digits := strconv.FormatInt(int64(math.Round(v)), 10)
	var out []byte
	for i := range len(digits) {
		if i > 0 && (len(digits)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, digits[i])
	}
	return string(out)
}

// driverTitle names a driver for a column's heading.
func driverTitle(driver string) string {
	switch driver {
	case "pg":
		return "Postgres"
	case "sqlite":
		return "SQLite"
	}
	return driver
}

func chartScenarioNames() string {
	var names []string
	for _, p := range chartPanels {
		names = append(names, p.scenario)
	}
	return strings.Join(names, ", ")
}

// writeChart draws the BENCH lines of results into the SVG file path.
func writeChart(path, title string, results io.Reader) error {
	figs, err := parseBench(results)
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	svg, err := drawChart(figs, title)
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	return os.WriteFile(path, []byte(svg), 0o644)
}

// defaultChartTitle is the chart's title when -chart-title gives none.
const defaultChartTitle = "sluice and other job queues, head to head"

// chartFrom draws the BENCH lines of the file from (standard input for
// "-") into the SVG file path.
func chartFrom(path, title, from string) error {
	if from == "-" {
		return writeChart(path, title, os.Stdin)
	}
	f, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	defer f.Close()
	return writeChart(path, title, f)
}
