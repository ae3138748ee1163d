package pgxdriver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/filtersql"
	"github.com/sluicehq/sluice/driver/internal/rowcodec"
)

// stateColumns are the columns of a driver.JobState, in the order
// scanStates reads them.
const stateColumns = "j.id, j.topic, j.queue, j.status, j.attempt, j.max_retries, coalesce(j.wait_run_at, j.run_at) AS run_at, j.created_at, " +
	"j.attempted_at, j.finalized_at, j.locked_by, j.progress, coalesce(j.logged, 0) AS logged"

// The statements of JobChanges. {t} is the table, {cols} stateColumns.
// Each orders its rows as its index holds them, which costs nothing and
// keeps a generic plan (the feed runs them every tick) from choosing a
// scan of the table that it expects to stop after a few rows.
const (
	// changesRunningSQL: $1 limit. It walks the lease index, whose rows
	// are the processing jobs.
	changesRunningSQL = `SELECT {cols} FROM {t} AS j
WHERE j.locked_until IS NOT NULL AND j.status = 'processing' ORDER BY j.locked_until LIMIT $1`
	// changesRunningCountSQL: $1 limit. The lease index alone: a job holds
	// a lease if and only if it is processing.
	changesRunningCountSQL = `SELECT {cols} FROM {t} AS j WHERE j.locked_until IS NOT NULL ORDER BY j.locked_until LIMIT $1`
	// changesByIDSQL: $1 IDs. Primary-key lookups.
	changesByIDSQL = `SELECT {cols} FROM {t} AS j WHERE j.id = ANY($1::uuid[])`
	// changesCreatedSQL: $1 first ID, $2 ID past the end, $3 limit. A
	// range of the primary key.
	changesCreatedSQL = `SELECT {cols} FROM {t} AS j WHERE j.id >= $1::uuid AND j.id < $2::uuid ORDER BY j.id LIMIT $3`
	// changesFinalizedSQL: $1 since, $2 limit. One range of the finalized
	// index per final status.
	// changesActedSQL: $1 since, $2 limit. The log of actions by time,
	// then each job by primary key (the LIMIT keeps the planner from
	// joining the whole table instead).
	changesActedSQL = `SELECT {cols}
FROM (SELECT a.id FROM {acts} AS a WHERE a.at >= $1 ORDER BY a.at LIMIT $2) AS a
CROSS JOIN LATERAL (SELECT * FROM {t} AS j WHERE j.id = a.id LIMIT 1) AS j`
	// changesActsCountSQL: $1 since, $2 limit. The log's entries, for
	// counting.
	changesActsCountSQL = `SELECT {cols} FROM {acts} AS a WHERE a.at >= $1 ORDER BY a.at LIMIT $2`
	// changesDeletedSQL: $1 since, $2 limit. The log's entries whose job
	// is gone, likewise.
	changesDeletedSQL = `SELECT a.id::text, a.topic, a.queue
FROM (SELECT * FROM {acts} AS a WHERE a.at >= $1 ORDER BY a.at LIMIT $2) AS a
LEFT JOIN LATERAL (SELECT true AS found FROM {t} AS j WHERE j.id = a.id LIMIT 1) AS j ON true
WHERE j.found IS NULL`
	changesFinalizedSQL = `SELECT * FROM (
	(SELECT {cols} FROM {t} AS j WHERE j.status = 'completed' AND j.finalized_at IS NOT NULL
		AND j.finalized_at >= $1 ORDER BY j.finalized_at LIMIT $2)
	UNION ALL
	(SELECT {cols} FROM {t} AS j WHERE j.status = 'failed' AND j.finalized_at IS NOT NULL
		AND j.finalized_at >= $1 ORDER BY j.finalized_at LIMIT $2)
	UNION ALL
	(SELECT {cols} FROM {t} AS j WHERE j.status = 'cancelled' AND j.finalized_at IS NOT NULL
		AND j.finalized_at >= $1 ORDER BY j.finalized_at LIMIT $2)
) AS f LIMIT $2`
)

// JobChanges sends the statements of the parts asked for in one batch: one
// round trip, each statement with a snapshot of its own, in order.
func (e *executor) JobChanges(ctx context.Context, p *driver.JobChangesParams) (*driver.JobChanges, error) {
	const op = "changes"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	switch {
	case p == nil:
		return nil, errors.New("pgxdriver: changes: nil params")
	case p.Limit < 1:
		return nil, fmt.Errorf("pgxdriver: changes: limit %d is less than 1", p.Limit)
	}
	res := &driver.JobChanges{}
	parts, err := changesParts(p, res)
	if err != nil {
		return nil, err
	}
	b := &pgx.Batch{}
	fill := strings.NewReplacer("{t}", e.d.Table(), "{acts}", e.d.actsTable(), "{cols}", stateColumns).Replace
	fillCount := strings.NewReplacer("{t}", e.d.Table(), "{acts}", e.d.actsTable(), "{cols}", "1").Replace
	var asked []changesPart
	for _, part := range parts {
		switch {
		case p.CountOnly && part.count != nil:
			b.Queue("SELECT count(*) FROM ("+fillCount(part.countSQL)+") AS c", part.args...)
		case p.CountOnly:
			continue
		default:
			b.Queue(fill(part.sql), part.args...)
		}
		asked = append(asked, part)
	}
	if len(asked) == 0 {
		return res, nil
	}
	br := e.db.SendBatch(ctx, b)
	defer br.Close()
	for _, part := range asked {
		if p.CountOnly {
			err = br.QueryRow().Scan(part.count)
		} else {
			err = readPart(br, part)
		}
		if err != nil {
			return nil, wrapErr(ctx, op, err)
		}
	}
	if err := br.Close(); err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	return res, nil
}

// changesPart is one part of JobChanges: its statement, read into rows
// (scanned by scan, scanStates if nil), and, if it can be counted, the
// statement that counts it (with {cols} "1") into count.
type changesPart struct {
	sql, countSQL string
	args          []any
	rows          *[]*driver.JobState
	scan          func(pgx.Rows) ([]*driver.JobState, error)
	count         *int
}

// changesParts returns the parts p asks for, reading into res.
func changesParts(p *driver.JobChangesParams, res *driver.JobChanges) ([]changesPart, error) {
	var parts []changesPart
	if p.Running {
		parts = append(parts, changesPart{sql: changesRunningSQL, countSQL: changesRunningCountSQL, args: []any{p.Limit},
			rows: &res.Running, count: &res.Counted.Running})
	}
	if p.IDs != nil && !p.CountOnly {
		res.ByID = []*driver.JobState{}
		if ids := uuids(p.IDs); len(ids) > 0 {
			parts = append(parts, changesPart{sql: changesByIDSQL, args: []any{ids}, rows: &res.ByID})
		}
	}
	if p.CreatedBefore != "" {
		from, okFrom := parseUUID(p.CreatedFrom)
		before, okBefore := parseUUID(p.CreatedBefore)
		if !okFrom || !okBefore {
			return nil, fmt.Errorf("pgxdriver: changes: ID range %q to %q: not UUIDs", p.CreatedFrom, p.CreatedBefore)
		}
		parts = append(parts, changesPart{sql: changesCreatedSQL, countSQL: changesCreatedSQL, args: []any{from, before, p.Limit},
			rows: &res.Created, count: &res.Counted.Created})
	}
	if !p.FinalizedSince.IsZero() {
		parts = append(parts, changesPart{sql: changesFinalizedSQL, countSQL: changesFinalizedSQL,
			args: []any{p.FinalizedSince, p.Limit}, rows: &res.Finalized, count: &res.Counted.Finalized})
	}
	if !p.ActedSince.IsZero() {
		args := []any{p.ActedSince, p.Limit}
		parts = append(parts,
			changesPart{sql: changesActedSQL, countSQL: changesActsCountSQL, args: args, rows: &res.Acted, count: &res.Counted.Acted},
			changesPart{sql: changesDeletedSQL, args: args, rows: &res.Deleted, scan: scanGone})
	}
	return parts, nil
}

// readPart reads the next result of br into part.
func readPart(br pgx.BatchResults, part changesPart) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	scan := part.scan
	if scan == nil {
		scan = scanStates
	}
	*part.rows, err = scan(rows)
	return err
}

// scanGone reads every row of rows, (id, topic, queue), and closes it.
func scanGone(rows pgx.Rows) ([]*driver.JobState, error) {
	gone := []*driver.JobState{}
	var s driver.JobState
	_, err := pgx.ForEachRow(rows, []any{&s.ID, &s.Topic, &s.Queue}, func() error {
		g := s
		gone = append(gone, &g)
		return nil
	})
	return gone, err
}

// actsTable returns the qualified, quoted log of actions.
func (d *Driver) actsTable() string { return d.ident(d.table + "_acts") }

// logActs returns build with the jobs its statement changed noted in the
// log of actions, and the log's entries older than
// driver.ActLogRetention deleted, in the same statement.
func (e *executor) logActs(p *driver.JobActParams, build func(q *filtersql.Query) string) func(q *filtersql.Query) string {
	return func(q *filtersql.Query) string {
		stmt := build(q)
		now, cutoff := q.Arg(p.Now), q.Arg(p.Now.Add(-driver.ActLogRetention))
		acts := e.d.actsTable()
		return `WITH changed AS (` + stmt + `),
	noted AS (INSERT INTO ` + acts + ` (at, id, topic, queue) SELECT ` + now + `::timestamptz, id, topic, queue FROM changed),
	pruned AS (DELETE FROM ` + acts + ` WHERE at < ` + cutoff + `::timestamptz)
SELECT * FROM changed`
	}
}

// scanStates reads every row of rows, of stateColumns, and closes it.
func scanStates(rows pgx.Rows) ([]*driver.JobState, error) {
	defer rows.Close()
	states := []*driver.JobState{}
	var (
		s                        driver.JobState
		runAt, createdAt         time.Time
		attemptedAt, finalizedAt pgtype.Timestamptz
		lockedBy                 pgtype.Text
		progress                 []byte
	)
	dest := []any{&s.ID, &s.Topic, &s.Queue, &s.Status, &s.Attempt, &s.MaxRetries, &runAt, &createdAt,
		&attemptedAt, &finalizedAt, &lockedBy, &progress, &s.Logged}
	for rows.Next() {
		progress = nil
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		st := s
		st.RunAt, st.CreatedAt = runAt.UTC(), createdAt.UTC()
		st.AttemptedAt, st.FinalizedAt = fromNullTime(attemptedAt), fromNullTime(finalizedAt)
		st.LockedBy = lockedBy.String
		var err error
		if st.Progress, err = rowcodec.Progress(progress); err != nil {
			return nil, fmt.Errorf("job %s: decode progress: %w", st.ID, err)
		}
		states = append(states, &st)
	}
	return states, rows.Err()
}
