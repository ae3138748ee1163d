package sqlitedriver

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/filtersql"
)

// newDialect returns how the driver writes filters for the jobs table
// named table: lists as JSON arrays read with json_each, times as integer
// microseconds, tags through the table of tags (which holds a row per tag
// of each job, so a list of the jobs carrying a tag reads those), metadata
// by JSON path.
func newDialect(table string) *filtersql.Dialect {
	tags := quoteIdent(table + "_tags")
	return &filtersql.Dialect{
		Mark: "?",
		In: func(col, ph string, vals []string) (string, any) {
			return col + " IN (SELECT value FROM json_each(" + ph + "))", matchableJSON(vals)
		},
		Time: func(t time.Time) any { return micros(t) },
		Tags: func(ph string, vals []string, any bool) (string, any) {
			sel := "SELECT job_id FROM " + tags + " WHERE tag IN (SELECT value FROM json_each(" + ph + "))"
			if !any && len(vals) > 1 {
				sel += " GROUP BY job_id HAVING count(*) = " + strconv.Itoa(len(vals))
			}
			return "id IN (" + sel + ")", matchableJSON(vals)
		},
		MetaKey: func(key string) any {
			b, _ := json.Marshal(key) // a quoted label: dots and brackets stay part of the key
			return "$." + string(b)
		},
		Meta: func(keyPh, valPh string) string {
			return "(json_type(metadata, " + keyPh + ") = 'text' AND json_extract(metadata, " + keyPh + ") = " + valPh + ")"
		},
		Payload: payloadCond,
	}
}

// payloadCond returns the condition that the payload holds m's value at
// m's path: its JSON type first (json_extract gives true as 1, and a
// string "1" as the text 1), then for a string or a number its value,
// numbers compared as numbers.
func payloadCond(arg func(any) string, m driver.PayloadMatch) string {
	path := "$"
	for _, k := range m.Path {
		b, _ := json.Marshal(k) // a quoted label: dots and brackets stay part of the key
		path += "." + string(b)
	}
	ph := arg(path)
	dec := json.NewDecoder(bytes.NewReader(m.Value))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return "FALSE" // the client sends scalars only
	}
	typ := "json_type(payload, " + ph + ")"
	extract := "json_extract(payload, " + ph + ")"
	switch v := v.(type) {
	case string:
		return "(" + typ + " = 'text' AND " + extract + " = " + arg(v) + ")"
	case json.Number:
		var n any = v.String()
		if i, err := v.Int64(); err == nil {
			n = i
		} else if f, err := v.Float64(); err == nil {
			n = f
		}
		return "(" + typ + " IN ('integer', 'real') AND " + extract + " = " + arg(n) + ")"
	case bool:
		return typ + " = '" + strconv.FormatBool(v) + "'"
	case nil:
		return typ + " = 'null'"
	}
	return "FALSE"
}

// matchableJSON returns, as a JSON array for json_each, the texts of a
// list of alternatives that follow the text rule: an empty array when
// none does. Left in, invalid UTF-8 would become U+FFFD in the array,
// text that a stored value may equal.
func matchableJSON(vals []string) string {
	kept, _ := driver.MatchableAmong(vals)
	b, _ := json.Marshal(kept) // strings always encode
	return string(b)
}

// JobList reads one page of jobs and their total: from the counts for a
// filter on statuses, topics and queues alone (first, so that a page that
// must be empty is not looked for), else by counting.
func (e *executor) JobList(ctx context.Context, p *driver.JobListParams) (*driver.JobListResult, error) {
	if p == nil {
		return nil, errors.New("sqlitedriver: list: nil params")
	}
	q := filtersql.New(e.d.dialect, &p.Filter)
	count := q.Clone()
	suffix := q.ListSuffix(p, p.AfterID)
	res := &driver.JobListResult{}
	err := e.read(ctx, "list", func(r runner) error {
		counted := filtersql.Counted(&p.Filter)
		if counted {
			var st driver.JobStats
			if err := r.tally(ctx, &p.Filter, &st); err != nil {
				return err
			}
			for _, c := range st.Counts {
				res.Total += c.Count
			}
			if p.AfterID == "" && p.Offset >= res.Total {
				return nil // the page is empty: no need to look for it
			}
		}
		rows, err := r.query(ctx, "SELECT "+columns+" FROM "+e.d.sqlTable()+" "+q.Where()+suffix, q.Args...)
		if err != nil {
			return err
		}
		if res.Jobs, err = scanRows(rows); err != nil || counted {
			return err
		}
		return r.queryRow(ctx, "SELECT count(*) FROM "+e.d.sqlTable()+" "+count.Where(), count.Args, &res.Total)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// JobStats reads the counts by status, queue and topic (counting the table
// only for a filter on more than those), then sums up the window's outcomes
// over the finalized index.
func (e *executor) JobStats(ctx context.Context, p *driver.JobStatsParams) (*driver.JobStats, error) {
	if p == nil {
		return nil, errors.New("sqlitedriver: stats: nil params")
	}
	q := filtersql.New(e.d.dialect, &p.Filter)
	win := q.Clone()
	win.In("status", []string{string(driver.StatusCompleted), string(driver.StatusFailed)})
	win.AddTime("finalized_at >= ", p.Since)
	done := q.Clone()
	done.In("status", []string{string(driver.StatusCompleted)})
	done.AddTime("finalized_at >= ", p.Since)
	st := &driver.JobStats{}
	err := e.read(ctx, "stats", func(r runner) error {
		var err error
		if p.Bucket > 0 {
			if st.Series, err = r.series(ctx, e.d.sqlTable(), win, p.Bucket); err != nil {
				return err
			}
		}
		if !p.DueAt.IsZero() {
			if st.OldestDue, err = r.oldestDue(ctx, &p.Filter, p.DueAt); err != nil {
				return err
			}
		}
		if filtersql.Counted(&p.Filter) {
			if err := r.tally(ctx, &p.Filter, st); err != nil {
				return err
			}
		} else {
			query, args := q.CountsBy(e.d.sqlTable())
			if err := r.counts(ctx, query, args, st); err != nil {
				return err
			}
		}
		var avg float64
		var timed int
		err = r.queryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'completed'),
	count(*) FILTER (WHERE status = 'failed'),
	count(*) FILTER (WHERE status = 'completed' AND attempted_at IS NOT NULL),
	coalesce(avg(finalized_at - attempted_at) FILTER (WHERE status = 'completed'), 0)
FROM `+e.d.sqlTable()+" "+win.Where(), win.Args, &st.Completed, &st.Failed, &timed, &avg)
		if err != nil || timed == 0 {
			return err
		}
		st.AvgDuration = time.Duration(math.Round(avg * 1000))
		// The nearest rank of the 95th percentile among n is ceil(0.95 n).
		var p95 int64
		rank := done.Arg((timed*95+99)/100 - 1)
		err = r.queryRow(ctx, `SELECT finalized_at - attempted_at AS d FROM `+e.d.sqlTable()+" "+done.Where()+
			` AND attempted_at IS NOT NULL ORDER BY d LIMIT 1 OFFSET `+rank, done.Args, &p95)
		st.P95Duration = time.Duration(p95) * time.Microsecond
		return err
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// series counts the jobs win selects, completed or failed, per bucket of
// FinalizedAt. It reads the rows the window's aggregate reads, through the
// same index.
func (r runner) series(ctx context.Context, table string, win *filtersql.Query, bucket time.Duration) ([]driver.JobBucket, error) {
	query, args := seriesSQL(table, win, bucket)
	rows, err := r.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	series := []driver.JobBucket{}
	for rows.Next() {
		var b driver.JobBucket
		var n int64
		if err := rows.Scan(&n, &b.Completed, &b.Failed); err != nil {
			return nil, err
		}
		b.Start = time.UnixMicro(n * bucket.Microseconds()).UTC()
		series = append(series, b)
	}
	return series, rows.Close()
}

// oldestDue reads, per queue, the earliest RunAt of the pending jobs
// filter selects that are due at dueAt (see driver.JobStats.OldestDue):
// it walks the claim index from one queue and priority that pending jobs
// have to the next, one probe each, and takes the first selected job of
// each in RunAt order, another probe. A waiting job's RunAt is past any
// dueAt.
func (r runner) oldestDue(ctx context.Context, filter *driver.JobFilter, dueAt time.Time) (map[string]time.Time, error) {
	t := r.d.sqlTable()
	first := filtersql.New(r.d.dialect, filter)
	first.Cond("status = 'pending'")
	queuePh, priorityPh := first.Arg(""), first.Arg(0)
	first.Cond("queue = " + queuePh + " AND priority = " + priorityPh)
	firstSQL := "SELECT run_at FROM " + t + " " + first.Where() + " ORDER BY run_at LIMIT 1"
	nextSQL := "SELECT queue, priority FROM " + t +
		" WHERE status = 'pending' AND (queue, priority) > (?, ?) ORDER BY queue, priority LIMIT 1"
	oldest := map[string]time.Time{}
	queue, priority := "", math.MinInt64
	for {
		err := r.queryRow(ctx, nextSQL, []any{queue, priority}, &queue, &priority)
		if errors.Is(err, errNoRow) {
			return oldest, nil
		} else if err != nil {
			return nil, err
		}
		// The placeholders of the queue and priority are the last two
		// of the filter's.
		args := append(first.Args[:len(first.Args)-2:len(first.Args)-2], queue, priority)
		var at int64
		switch err := r.queryRow(ctx, firstSQL, args, &at); {
		case errors.Is(err, errNoRow):
		case err != nil:
			return nil, err
		case at <= micros(dueAt) && (oldest[queue].IsZero() || at < micros(oldest[queue])):
			oldest[queue] = time.UnixMicro(at).UTC()
		}
	}
}

// seriesSQL returns the statement of series and its arguments: buckets
// numbered by FinalizedAt (integer microseconds) divided by the bucket's.
func seriesSQL(table string, win *filtersql.Query, bucket time.Duration) (string, []any) {
	q := win.Clone()
	width := q.Arg(bucket.Microseconds())
	return `SELECT finalized_at / ` + width + ` AS b, count(*) FILTER (WHERE status = 'completed'),
	count(*) FILTER (WHERE status = 'failed')
FROM ` + table + " " + q.Where() + ` GROUP BY b ORDER BY b`, q.Args
}

// errNoRow is returned by queryRow and scanOne for a query that returned
// no row.
var errNoRow = errors.New("no row")

// queryRow runs query on r and scans its first row into dest, or returns
// errNoRow.
func (r runner) queryRow(ctx context.Context, query string, args []any, dest ...any) error {
	rows, err := r.query(ctx, query, args...)
	if err != nil {
		return err
	}
	return scanOne(rows, dest...)
}

// scanOne scans the first row of rows into dest, or returns errNoRow, and
// closes rows.
func scanOne(rows *sql.Rows, dest ...any) error {
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return errNoRow
	}
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	return rows.Close()
}

// tally adds the counts of the jobs f selects, which must be
// filtersql.Counted, to st.Counts.
func (r runner) tally(ctx context.Context, f *driver.JobFilter, st *driver.JobStats) error {
	query, args := filtersql.Tally(r.d.dialect, f, r.d.sqlCounts())
	return r.counts(ctx, query, args, st)
}

// counts adds the rows (status, topic, queue, count) of query to
// st.Counts.
func (r runner) counts(ctx context.Context, query string, args []any, st *driver.JobStats) error {
	rows, err := r.query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var jc driver.JobCount
		if err := rows.Scan(&jc.Status, &jc.Topic, &jc.Queue, &jc.Count); err != nil {
			return err
		}
		st.Counts = append(st.Counts, jc)
	}
	return rows.Close()
}

// QueueLoad counts a queue's running jobs by holder, then the due jobs
// ahead of a place in claim order (see queueRunningSQL and queueAheadSQL).
func (e *executor) QueueLoad(ctx context.Context, p *driver.QueueLoadParams) (*driver.QueueLoad, error) {
	switch {
	case p == nil:
		return nil, errors.New("sqlitedriver: queue load: nil params")
	case p.AheadLimit < 1:
		return nil, fmt.Errorf("sqlitedriver: queue load: ahead limit %d is less than 1", p.AheadLimit)
	}
	var topics any
	if len(p.Topics) > 0 {
		topics = matchableJSON(p.Topics)
	}
	load := &driver.QueueLoad{Running: map[string]int{}}
	err := e.read(ctx, "queue load", func(r runner) error {
		rows, err := r.query(ctx, e.d.q.queueRunning, p.Queue)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				holder string
				n      int
			)
			if err := rows.Scan(&holder, &n); err != nil {
				return err
			}
			load.Running[holder] = n
		}
		if err := rows.Close(); err != nil {
			return err
		}
		return r.queryRow(ctx, e.d.q.queueAhead,
			[]any{p.Queue, p.Priority, micros(p.RunAt), p.ID, micros(p.Now), p.AheadLimit, topics}, &load.Ahead)
	})
	if err != nil {
		return nil, err
	}
	return load, nil
}
