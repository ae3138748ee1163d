package pgxdriver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/metricsql"
)

// metricsTable is the qualified, quoted table of the metrics store.
func (d *Driver) metricsTable() string { return d.ident(d.table + "_metrics") }

// MetricsAdd upserts each point, adding its figures to the stored ones,
// in topic and minute order, in one transaction and one round trip.
func (e *executor) MetricsAdd(ctx context.Context, p *driver.MetricsAddParams) error {
	const op = "metrics add"
	if err := e.start(ctx, op); err != nil {
		return err
	}
	if p == nil {
		return errors.New("pgxdriver: metrics add: nil params")
	}
	q := `INSERT INTO ` + e.d.metricsTable() + ` AS m (width, topic, minute, ` + metricsql.Columns() + `)
VALUES ($1, $2, $3, ` + metricsql.Placeholders("$", 4, metricsql.Count) + `)
ON CONFLICT (width, topic, minute) DO UPDATE SET ` + metricsql.Added("m")
	var stmts []batchStmt
	for _, r := range metricsql.Rows(p.Points) {
		if !driver.Matchable(r.Topic) {
			return fmt.Errorf("pgxdriver: metrics add: topic %q breaks the text rule", r.Topic)
		}
		stmts = append(stmts, batchStmt{q, append([]any{r.Width, r.Topic, r.Start}, metricsql.Args(&r.MetricsPoint)...), drain})
	}
	if len(stmts) == 0 {
		return nil
	}
	// Metrics are best effort: a crash may lose the last seconds of them,
	// as it loses the claims this driver commits without waiting (lazy).
	if err := e.queryBatch(ctx, lazy, stmts...); err != nil {
		return wrapErr(ctx, op, err)
	}
	return nil
}

// MetricsRead sums the rows of the window per topic and bucket in the
// database, hours' rows for buckets of whole hours (see metricsql.Width),
// through the primary key (topics given) or the minute index.
func (e *executor) MetricsRead(ctx context.Context, p *driver.MetricsReadParams) ([]driver.MetricsPoint, error) {
	const op = "metrics read"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil || p.Bucket < time.Minute {
		return nil, errors.New("pgxdriver: metrics read: nil params, or a bucket under a minute")
	}
	topics, ok := driver.MatchableAmong(p.Topics)
	out := []driver.MetricsPoint{}
	if !ok {
		return out, nil // no such topic
	}
	width := p.Bucket.Microseconds()
	q := `SELECT topic, floor(extract(epoch FROM minute) * 1000000 / $3::bigint)::bigint AS b, ` + metricsql.Sums() + `
FROM ` + e.d.metricsTable() + ` WHERE width = $5 AND minute >= $1 AND minute < $2 AND ($4::text[] IS NULL OR topic = ANY($4::text[]))
GROUP BY topic, b ORDER BY topic, b`
	var list any
	if len(topics) > 0 {
		list = topics
	}
	rows, err := e.db.Query(ctx, q, p.From, p.To, width, list, metricsql.Width(p))
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	var pt driver.MetricsPoint
	var b int64
	targets := append([]any{&pt.Topic, &b}, metricsql.Targets(&pt)...)
	_, err = pgx.ForEachRow(rows, targets, func() error {
		pt.Start = time.UnixMicro(b * width).UTC()
		out = append(out, pt)
		return nil
	})
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	return out, nil
}

// MetricsClean deletes the points of minutes before Before.
func (e *executor) MetricsClean(ctx context.Context, p *driver.MetricsCleanParams) (int, error) {
	const op = "metrics clean"
	if err := e.start(ctx, op); err != nil {
		return 0, err
	}
	if p == nil {
		return 0, errors.New("pgxdriver: metrics clean: nil params")
	}
	tag, err := e.db.Exec(ctx, `DELETE FROM `+e.d.metricsTable()+` WHERE minute < $1`, p.Before)
	if err != nil {
		return 0, wrapErr(ctx, op, err)
	}
	return int(tag.RowsAffected()), nil
}
