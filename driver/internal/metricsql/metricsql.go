// Package metricsql writes the statements of the metrics store (see
// driver.MetricsExecutor) that both drivers share: its columns, the sums
// an upsert adds and a read takes, and the arguments and scan targets of
// a point. The table is {t_metrics} of the drivers' migrations.
package metricsql

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// counters are the columns of a point's counts, its histogram's after
// them.
var counters = []string{"completed", "failed", "duration_sum"}

// columns are every column of a point's figures, in the order of Args.
var columns = func() []string {
	cols := slices.Clone(counters)
	for i := range driver.MetricsBuckets {
		cols = append(cols, fmt.Sprintf("h%02d", i))
	}
	return cols
}()

// Columns returns the columns of a point's figures, comma-separated, in
// the order of Args.
func Columns() string { return strings.Join(columns, ", ") }

// Placeholders returns n placeholders of mark (as "$" or "?"), numbered
// from first, comma-separated.
func Placeholders(mark string, first, n int) string {
	ph := make([]string, n)
	for i := range ph {
		ph[i] = fmt.Sprintf("%s%d", mark, first+i)
	}
	return strings.Join(ph, ", ")
}

// Added returns the SET clause of an upsert into the table aliased alias
// that adds the new row's figures (excluded) to the stored ones.
func Added(alias string) string {
	set := make([]string, len(columns))
	for i, c := range columns {
		set[i] = fmt.Sprintf("%s = %s.%s + excluded.%s", c, alias, c, c)
	}
	return strings.Join(set, ", ")
}

// Sums returns the sums of every figure, as a read by bucket selects
// them, in the order of Targets.
func Sums() string {
	sums := make([]string, len(columns))
	for i, c := range columns {
		sums[i] = "sum(" + c + ")"
	}
	return strings.Join(sums, ", ")
}

// Count is how many figures a point has: Args's and Targets's length.
var Count = len(columns)

// Args returns p's figures, in the order of Columns.
func Args(p *driver.MetricsPoint) []any {
	args := make([]any, 0, Count)
	args = append(args, p.Completed, p.Failed, p.DurationSum)
	for _, n := range p.Histogram {
		args = append(args, n)
	}
	return args
}

// Targets returns where to scan p's figures, in the order of Sums.
func Targets(p *driver.MetricsPoint) []any {
	t := make([]any, 0, Count)
	t = append(t, &p.Completed, &p.Failed, &p.DurationSum)
	for i := range p.Histogram {
		t = append(t, &p.Histogram[i])
	}
	return t
}

// Widths of the store's rows: a minute's, and an hour's (whose minute is
// the hour's first), in minutes.
const (
	Minute = 1
	Hour   = 60
)

// Row is one row an add upserts: a point and the width of its row.
type Row struct {
	Width int
	driver.MetricsPoint
}

// Rows returns the rows an add of points upserts: a row of each point's
// minute, and one of each topic's hour summing its points, in the order
// writers lock rows in (width, topic, minute), so that two writers never
// wait for each other in a cycle.
func Rows(points []driver.MetricsPoint) []Row {
	rows := make([]Row, 0, 2*len(points))
	hours := map[string]int{} // topic and hour to index in rows
	for _, p := range points {
		rows = append(rows, Row{Minute, p})
	}
	for _, p := range points {
		p.Start = p.Start.Truncate(time.Hour)
		k := p.Topic + "\x00" + p.Start.String()
		if i, ok := hours[k]; ok {
			rows[i].Add(&p)
			continue
		}
		hours[k] = len(rows)
		rows = append(rows, Row{Hour, p})
	}
	slices.SortFunc(rows, func(a, b Row) int {
		if a.Width != b.Width {
			return a.Width - b.Width
		}
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return a.Start.Compare(b.Start)
	})
	return rows
}

// Width returns the width of the rows a read of p sums: hours when its
// buckets are whole hours from a whole hour, else minutes.
func Width(p *driver.MetricsReadParams) int {
	if p.Bucket%time.Hour == 0 && p.From.Truncate(time.Hour).Equal(p.From) {
		return Hour
	}
	return Minute
}
