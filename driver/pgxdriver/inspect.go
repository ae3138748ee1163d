package pgxdriver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/filtersql"
)

// dialect writes filters for Postgres: lists as text arrays, times as
// timestamptz.
var dialect = &filtersql.Dialect{
	Mark: "$",
	In: func(col, ph string, vals []string) (string, any) {
		return col + " = ANY(" + ph + "::text[])", vals
	},
	UUIDIn: func(col, ph string, vals []string) (string, any) {
		return col + " = ANY(" + ph + "::uuid[])", vals
	},
	Time: func(t time.Time) any { return t },
	// The GIN index over tags serves both: @> (every tag) and && (any).
	Tags: func(ph string, tags []string, any bool) (string, any) {
		if any {
			return "tags && " + ph + "::text[]", tags
		}
		return "tags @> " + ph + "::text[]", tags
	},
	MetaKey: func(key string) any { return key },
	Meta: func(keyPh, valPh string) string {
		return "metadata -> " + keyPh + "::text = to_jsonb(" + valPh + "::text)"
	},
	// jsonb's equality: strings alike, numbers of equal value, the same
	// true, false or null; a missing path is NULL, which equals nothing.
	Payload: func(arg func(any) string, m driver.PayloadMatch) string {
		return "payload #> " + arg(m.Path) + "::text[] = " + arg(string(m.Value)) + "::jsonb"
	},
}

// JobList reads one page of jobs and their total in one transaction, so
// both see the same jobs. A total over statuses, topics and queues alone is
// read from the counts (first, so that a page that must be empty is not
// looked for); any other is counted.
func (e *executor) JobList(ctx context.Context, p *driver.JobListParams) (*driver.JobListResult, error) {
	const op = "list"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("pgxdriver: list: nil params")
	}
	q := filtersql.New(dialect, &p.Filter)
	count := q.Clone()
	var cursor any
	if p.AfterID != "" {
		id, ok := parseUUID(p.AfterID)
		if !ok {
			return nil, errors.New("pgxdriver: list: cursor is not a job ID")
		}
		cursor = id
	}
	suffix := q.ListSuffix(p, cursor)
	res := &driver.JobListResult{}
	err := e.atomic(ctx, func(db dbtx) error {
		counted := filtersql.Counted(&p.Filter)
		if counted {
			counts, err := e.d.tally(ctx, db, &p.Filter)
			if err != nil {
				return err
			}
			for _, c := range counts {
				res.Total += c.Count
			}
			if p.AfterID == "" && p.Offset >= res.Total {
				return nil // the page is empty: no need to look for it
			}
		}
		rows, err := db.Query(ctx, "SELECT "+columns+" FROM "+e.d.Table()+" AS j "+q.Where()+suffix, q.Args...)
		if err != nil {
			return err
		}
		if res.Jobs, err = scanRows(rows); err != nil || counted {
			return err
		}
		return db.QueryRow(ctx, "SELECT count(*) FROM "+e.d.Table()+" "+count.Where(), count.Args...).Scan(&res.Total)
	})
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	return res, nil
}

// JobStats reads the counts by status, topic and queue (counting the
// table only for a filter on more than those), and sums up the window's
// outcomes with one aggregate over the finalized index, all in one
// transaction.
func (e *executor) JobStats(ctx context.Context, p *driver.JobStatsParams) (*driver.JobStats, error) {
	const op = "stats"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("pgxdriver: stats: nil params")
	}
	q := filtersql.New(dialect, &p.Filter)
	win := windowQuery(&p.Filter, p.Since)
	st := &driver.JobStats{}
	err := e.atomic(ctx, func(db dbtx) error {
		if filtersql.Counted(&p.Filter) {
			counts, err := e.d.tally(ctx, db, &p.Filter)
			if err != nil {
				return err
			}
			st.Counts = counts
		} else if err := e.countBy(ctx, db, q, st); err != nil {
			return err
		}
		var avg float64
		var p95 int64
		err := db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'completed'),
	count(*) FILTER (WHERE status = 'failed'),
	coalesce(avg(d) FILTER (WHERE status = 'completed'), 0)::float8,
	coalesce(percentile_disc(0.95) WITHIN GROUP (ORDER BY d) FILTER (WHERE status = 'completed'), 0)
FROM (SELECT status, (extract(epoch FROM finalized_at - attempted_at) * 1000000)::bigint AS d
	FROM `+e.d.Table()+" "+win.Where()+") AS w", win.Args...).Scan(&st.Completed, &st.Failed, &avg, &p95)
		st.AvgDuration = time.Duration(math.Round(avg * 1000))
		st.P95Duration = time.Duration(p95) * time.Microsecond
		if err == nil && p.Bucket > 0 {
			st.Series, err = e.series(ctx, db, win, p.Bucket)
		}
		if err == nil && !p.DueAt.IsZero() {
			st.OldestDue, err = e.oldestDue(ctx, db, &p.Filter, p.DueAt)
		}
		return err
	})
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	return st, nil
}

// series counts the jobs win selects, completed or failed, per bucket of
// FinalizedAt. It reads the rows the window's aggregate read, through the
// same index.
func (e *executor) series(ctx context.Context, db dbtx, win *filtersql.Query, bucket time.Duration) ([]driver.JobBucket, error) {
	sql, args := seriesSQL(e.d.Table(), win, bucket)
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	series := []driver.JobBucket{}
	var b driver.JobBucket
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&n, &b.Completed, &b.Failed}, func() error {
		b.Start = time.UnixMicro(n * bucket.Microseconds()).UTC()
		series = append(series, b)
		return nil
	})
	return series, err
}

// oldestDue reads, per queue, the earliest RunAt of the pending jobs
// filter selects that are due at dueAt (see driver.JobStats.OldestDue).
// A loose scan of the claim index finds each queue and priority pending
// jobs have, one probe each; the first selected job of each, in RunAt
// order, is another probe. A waiting job's RunAt is past any dueAt.
func (e *executor) oldestDue(ctx context.Context, db dbtx, filter *driver.JobFilter, dueAt time.Time) (map[string]time.Time, error) {
	first := filtersql.New(dialect, filter)
	first.Cond("status = 'pending' AND queue = pr.queue AND priority = pr.priority")
	due := first.Arg(dueAt)
	t := e.d.Table()
	rows, err := db.Query(ctx, `WITH RECURSIVE pr AS (
	(SELECT queue, priority FROM `+t+` WHERE status = 'pending' ORDER BY queue, priority LIMIT 1)
	UNION ALL
	SELECT n.queue, n.priority FROM pr, LATERAL (SELECT queue, priority FROM `+t+`
		WHERE status = 'pending' AND (queue, priority) > (pr.queue, pr.priority)
		ORDER BY queue, priority LIMIT 1) AS n
)
SELECT pr.queue, min(o.run_at) FROM pr,
	LATERAL (SELECT run_at FROM `+t+" "+first.Where()+` ORDER BY run_at LIMIT 1) AS o
GROUP BY pr.queue HAVING min(o.run_at) <= `+due+`::timestamptz`, first.Args...)
	if err != nil {
		return nil, err
	}
	oldest := map[string]time.Time{}
	var (
		queue string
		at    time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&queue, &at}, func() error {
		oldest[queue] = at.UTC()
		return nil
	})
	return oldest, err
}

// seriesSQL returns the statement of series and its arguments: buckets
// numbered by FinalizedAt in microseconds since the epoch, divided by the
// bucket's.
func seriesSQL(table string, win *filtersql.Query, bucket time.Duration) (string, []any) {
	q := win.Clone()
	width := q.Arg(bucket.Microseconds())
	return `SELECT b, count(*) FILTER (WHERE status = 'completed'), count(*) FILTER (WHERE status = 'failed')
FROM (SELECT status, floor(extract(epoch FROM finalized_at) * 1000000 / ` + width + `::bigint)::bigint AS b
	FROM ` + table + " " + q.Where() + `) AS w
GROUP BY b ORDER BY b`, q.Args
}

// windowQuery returns the selection of the jobs filter selects that
// completed or failed since since.
func windowQuery(filter *driver.JobFilter, since time.Time) *filtersql.Query {
	win := filtersql.New(dialect, filter)
	win.In("status", []string{string(driver.StatusCompleted), string(driver.StatusFailed)})
	win.AddTime("finalized_at >= ", since)
	return win
}

// countBy counts the jobs q selects by status, topic and queue, into
// st.Counts.
func (e *executor) countBy(ctx context.Context, db dbtx, q *filtersql.Query, st *driver.JobStats) error {
	sql, args := q.CountsBy(e.d.Table())
	counts, err := queryCounts(ctx, db, sql, args)
	st.Counts = append(st.Counts, counts...)
	return err
}

// QueueLoad counts a queue's running jobs by holder and the due jobs ahead
// of a place in claim order (see queueRunningSQL and queueAheadSQL) in one
// round trip.
func (e *executor) QueueLoad(ctx context.Context, p *driver.QueueLoadParams) (*driver.QueueLoad, error) {
	const op = "queue load"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	switch {
	case p == nil:
		return nil, errors.New("pgxdriver: queue load: nil params")
	case p.AheadLimit < 1:
		return nil, fmt.Errorf("pgxdriver: queue load: ahead limit %d is less than 1", p.AheadLimit)
	}
	id, ok := parseUUID(p.ID)
	if !ok {
		return nil, fmt.Errorf("pgxdriver: queue load: %q is not a job ID", p.ID)
	}
	load := &driver.QueueLoad{Running: map[string]int{}}
	if !driver.Matchable(p.Queue) {
		return load, nil // no such queue
	}
	topics, _ := driver.MatchableAmong(p.Topics)
	err := e.atomic(ctx, func(db dbtx) error {
		b := &pgx.Batch{}
		b.Queue(e.d.q.queueRunning, p.Queue)
		b.Queue(e.d.q.queueAhead, p.Queue, p.Priority, p.RunAt, id, p.Now, p.AheadLimit, topics)
		br := db.SendBatch(ctx, b)
		defer br.Close()
		rows, err := br.Query()
		if err != nil {
			return err
		}
		var (
			holder string
			n      int
		)
		_, err = pgx.ForEachRow(rows, []any{&holder, &n}, func() error {
			load.Running[holder] = n
			return nil
		})
		if err != nil {
			return err
		}
		if err := br.QueryRow().Scan(&load.Ahead); err != nil {
			return err
		}
		return br.Close()
	})
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	return load, nil
}
