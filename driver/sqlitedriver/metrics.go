package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/metricsql"
)

// metricsTable is the quoted table of the metrics store.
func (d *Driver) metricsTable() string { return quoteIdent(d.table + "_metrics") }

// MetricsAdd upserts each point, adding its figures to the stored ones,
// in one write transaction.
func (e *executor) MetricsAdd(ctx context.Context, p *driver.MetricsAddParams) error {
	if p == nil {
		return errors.New("sqlitedriver: metrics add: nil params")
	}
	q := `INSERT INTO ` + e.d.metricsTable() + ` AS m (width, topic, minute, ` + metricsql.Columns() + `)
VALUES (?1, ?2, ?3, ` + metricsql.Placeholders("?", 4, metricsql.Count) + `)
ON CONFLICT (width, topic, minute) DO UPDATE SET ` + metricsql.Added("m")
	rows := metricsql.Rows(p.Points)
	for _, r := range rows {
		if !driver.Matchable(r.Topic) {
			return fmt.Errorf("sqlitedriver: metrics add: topic %q breaks the text rule", r.Topic)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	return e.writeTx(ctx, "metrics add", []string{q}, func(rn runner) error {
		for _, r := range rows {
			args := append([]any{r.Width, r.Topic, micros(r.Start)}, metricsql.Args(&r.MetricsPoint)...)
			if _, err := rn.exec(ctx, q, args...); err != nil {
				return err
			}
		}
		return nil
	})
}

// MetricsRead sums the rows of the window per topic and bucket, hours'
// rows for buckets of whole hours (see metricsql.Width), through the
// primary key (topics given) or the minute index.
func (e *executor) MetricsRead(ctx context.Context, p *driver.MetricsReadParams) ([]driver.MetricsPoint, error) {
	if p == nil || p.Bucket < time.Minute {
		return nil, errors.New("sqlitedriver: metrics read: nil params, or a bucket under a minute")
	}
	width := p.Bucket.Microseconds()
	q := `SELECT topic, minute / ?3 AS b, ` + metricsql.Sums() + ` FROM ` + e.d.metricsTable() + `
WHERE width = ?5 AND minute >= ?1 AND minute < ?2 AND (?4 = '[]' OR topic IN (SELECT value FROM json_each(?4)))
GROUP BY topic, b ORDER BY topic, b`
	topics := "[]" // every topic
	if len(p.Topics) > 0 {
		if _, ok := driver.MatchableAmong(p.Topics); !ok {
			return []driver.MetricsPoint{}, nil // no such topic
		}
		topics = matchableJSON(p.Topics)
	}
	out := []driver.MetricsPoint{}
	err := e.read(ctx, "metrics read", func(r runner) error {
		rows, err := r.query(ctx, q, micros(p.From), micros(p.To), width, topics, metricsql.Width(p))
		if err != nil {
			return err
		}
		return scanPoints(rows, width, &out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// scanPoints appends the points of rows (topic, bucket number, sums) to
// out.
func scanPoints(rows *sql.Rows, width int64, out *[]driver.MetricsPoint) error {
	defer rows.Close()
	var pt driver.MetricsPoint
	var b int64
	targets := append([]any{&pt.Topic, &b}, metricsql.Targets(&pt)...)
	for rows.Next() {
		if err := rows.Scan(targets...); err != nil {
			return err
		}
		pt.Start = time.UnixMicro(b * width).UTC()
		*out = append(*out, pt)
	}
	return rows.Close()
}

// MetricsClean deletes the points of minutes before Before.
func (e *executor) MetricsClean(ctx context.Context, p *driver.MetricsCleanParams) (int, error) {
	if p == nil {
		return 0, errors.New("sqlitedriver: metrics clean: nil params")
	}
	var n int64
	err := e.write(ctx, "metrics clean", func(r runner) error {
		res, err := r.exec(ctx, `DELETE FROM `+e.d.metricsTable()+` WHERE minute < ?`, micros(p.Before))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}
