package sqlitedriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/rowcodec"
)

// stateColumns are the columns of a driver.JobState, in the order
// scanStates reads them.
const stateColumns = "id, topic, queue, status, attempt, max_retries, coalesce(wait_run_at, run_at), created_at, " +
	"attempted_at, finalized_at, locked_by, progress, coalesce(logged, 0)"

// The statements of JobChanges. {t} is the table, {cols} stateColumns.
const (
	// changesRunningSQL: ?1 limit. It walks the lease index, which holds
	// the processing jobs only.
	changesRunningSQL = `SELECT {cols} FROM {t} WHERE status = 'processing' LIMIT ?1`
	// changesByIDSQL: ?1 IDs (a JSON array). Primary-key lookups.
	changesByIDSQL = `SELECT {cols} FROM {t} WHERE id IN (SELECT value FROM json_each(?1))`
	// changesCreatedSQL: ?1 first ID, ?2 ID past the end, ?3 limit. A
	// range of the primary key.
	changesCreatedSQL = `SELECT {cols} FROM {t} WHERE id >= ?1 AND id < ?2 LIMIT ?3`
	// changesActedSQL: ?1 since, ?2 limit. The log of actions by time,
	// then the jobs by primary key.
	changesActedSQL = `SELECT {cols} FROM {t}
WHERE id IN (SELECT id FROM {acts} WHERE at >= ?1 ORDER BY at LIMIT ?2)`
	// changesActsCountSQL: ?1 since, ?2 limit. The log's entries, for
	// counting.
	changesActsCountSQL = `SELECT {cols} FROM {acts} WHERE at >= ?1 ORDER BY at LIMIT ?2`
	// changesDeletedSQL: ?1 since, ?2 limit. The log's entries whose job
	// is gone.
	changesDeletedSQL = `SELECT a.id, a.topic, a.queue FROM {acts} AS a
WHERE a.at >= ?1 AND NOT EXISTS (SELECT 1 FROM {t} AS j WHERE j.id = a.id) ORDER BY a.at LIMIT ?2`
	// noteActsSQL: ?1 at, ?2 the jobs, a JSON array of [id, topic,
	// queue].
	noteActsSQL = `INSERT INTO {acts} (at, id, topic, queue)
SELECT ?1, json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]') FROM json_each(?2)`
	// pruneActsSQL: ?1 the oldest time kept.
	pruneActsSQL = `DELETE FROM {acts} WHERE at < ?1`
	// changesFinalizedSQL: ?1 since, ?2 limit. One range of the finalized
	// index per final status.
	changesFinalizedSQL = `SELECT {cols} FROM {t}
WHERE finalized_at IS NOT NULL AND status IN ('completed', 'failed', 'cancelled') AND finalized_at >= ?1 LIMIT ?2`
)

// JobChanges runs the statements of the parts asked for, in order, each a
// read of its own (on the handle) or in the caller's transaction.
func (e *executor) JobChanges(ctx context.Context, p *driver.JobChangesParams) (*driver.JobChanges, error) {
	switch {
	case p == nil:
		return nil, errors.New("sqlitedriver: changes: nil params")
	case p.Limit < 1:
		return nil, fmt.Errorf("sqlitedriver: changes: limit %d is less than 1", p.Limit)
	}
	res := &driver.JobChanges{}
	parts := changesParts(p, res)
	fill := e.d.changesReplacer().Replace
	fillCount := e.d.changesReplacer("1").Replace
	err := e.read(ctx, "changes", func(r runner) error {
		for _, part := range parts {
			if p.CountOnly {
				if part.count == nil {
					continue
				}
				if err := r.queryRow(ctx, "SELECT count(*) FROM ("+fillCount(part.countSQL)+")", part.args, part.count); err != nil {
					return err
				}
				continue
			}
			rows, err := r.query(ctx, fill(part.sql), part.args...)
			if err != nil {
				return err
			}
			scan := part.scan
			if scan == nil {
				scan = scanStates
			}
			if *part.rows, err = scan(rows); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
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
	scan          func(*sql.Rows) ([]*driver.JobState, error)
	count         *int
}

// changesParts returns the parts p asks for, reading into res.
func changesParts(p *driver.JobChangesParams, res *driver.JobChanges) []changesPart {
	var parts []changesPart
	if p.Running {
		parts = append(parts, changesPart{sql: changesRunningSQL, countSQL: changesRunningSQL, args: []any{p.Limit},
			rows: &res.Running, count: &res.Counted.Running})
	}
	if p.IDs != nil && !p.CountOnly {
		parts = append(parts, changesPart{sql: changesByIDSQL, args: []any{matchableJSON(p.IDs)}, rows: &res.ByID})
	}
	if p.CreatedBefore != "" {
		parts = append(parts, changesPart{sql: changesCreatedSQL, countSQL: changesCreatedSQL,
			args: []any{p.CreatedFrom, p.CreatedBefore, p.Limit}, rows: &res.Created, count: &res.Counted.Created})
	}
	if !p.FinalizedSince.IsZero() {
		parts = append(parts, changesPart{sql: changesFinalizedSQL, countSQL: changesFinalizedSQL,
			args: []any{micros(p.FinalizedSince), p.Limit}, rows: &res.Finalized, count: &res.Counted.Finalized})
	}
	if !p.ActedSince.IsZero() {
		args := []any{micros(p.ActedSince), p.Limit}
		parts = append(parts,
			changesPart{sql: changesActedSQL, countSQL: changesActsCountSQL, args: args, rows: &res.Acted, count: &res.Counted.Acted},
			changesPart{sql: changesDeletedSQL, args: args, rows: &res.Deleted, scan: scanGone})
	}
	return parts
}

// scanGone reads every row of rows, (id, topic, queue), and closes it.
func scanGone(rows *sql.Rows) ([]*driver.JobState, error) {
	defer rows.Close()
	gone := []*driver.JobState{}
	for rows.Next() {
		var s driver.JobState
		if err := rows.Scan(&s.ID, &s.Topic, &s.Queue); err != nil {
			return nil, err
		}
		gone = append(gone, &s)
	}
	return gone, rows.Close()
}

// changesReplacer fills in the table names of the statements of this
// file, and the columns they select: stateColumns, or cols if given.
func (d *Driver) changesReplacer(cols ...string) *strings.Replacer {
	selected := stateColumns
	if len(cols) > 0 {
		selected = cols[0]
	}
	return strings.NewReplacer("{t}", d.sqlTable(), "{cols}", selected, "{acts}", quoteIdent(d.table+"_acts"))
}

// actQueries returns the statements that keep the log of actions.
func (d *Driver) actQueries() []string {
	r := d.changesReplacer()
	return []string{r.Replace(noteActsSQL), r.Replace(pruneActsSQL)}
}

// noteActs notes jobs, changed at now by a requeue or a delete, in the log
// of actions, and deletes the entries older than driver.ActLogRetention.
func (e *executor) noteActs(ctx context.Context, r runner, now time.Time, jobs []*driver.JobRow) error {
	if len(jobs) == 0 {
		return nil
	}
	entries := make([][3]string, len(jobs))
	for i, j := range jobs {
		entries[i] = [3]string{j.ID, j.Topic, j.Queue}
	}
	b, _ := json.Marshal(entries) // strings always encode
	queries := e.d.actQueries()
	if _, err := r.exec(ctx, queries[0], micros(now), string(b)); err != nil {
		return err
	}
	_, err := r.exec(ctx, queries[1], micros(now.Add(-driver.ActLogRetention)))
	return err
}

// scanStates reads every row of rows, of stateColumns, and closes it.
func scanStates(rows *sql.Rows) ([]*driver.JobState, error) {
	defer rows.Close()
	states := []*driver.JobState{}
	for rows.Next() {
		var (
			s                        driver.JobState
			status                   string
			runAt, createdAt         int64
			attemptedAt, finalizedAt sql.NullInt64
			lockedBy                 sql.NullString
			progress                 []byte
		)
		err := rows.Scan(&s.ID, &s.Topic, &s.Queue, &status, &s.Attempt, &s.MaxRetries, &runAt, &createdAt,
			&attemptedAt, &finalizedAt, &lockedBy, &progress, &s.Logged)
		if err != nil {
			return nil, err
		}
		s.Status = driver.JobStatus(status)
		s.RunAt, s.CreatedAt = fromMicros(runAt), fromMicros(createdAt)
		s.AttemptedAt, s.FinalizedAt = fromNullMicros(attemptedAt), fromNullMicros(finalizedAt)
		s.LockedBy = lockedBy.String
		if s.Progress, err = rowcodec.Progress(progress); err != nil {
			return nil, fmt.Errorf("job %s: decode progress: %w", s.ID, err)
		}
		states = append(states, &s)
	}
	return states, rows.Close()
}
