package sqlitedriver

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/rowcodec"
)

// Times are stored as INTEGER microseconds since the Unix epoch, UTC, so
// they sort and can be served by an index. Unset times are NULL.

// micros returns t as stored.
func micros(t time.Time) int64 { return t.UnixMicro() }

// nullMicros returns t as stored, NULL when t is zero.
func nullMicros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

// fromMicros returns the time stored as us.
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// fromNullMicros returns the time stored as us, zero when NULL.
func fromNullMicros(us sql.NullInt64) time.Time {
	if !us.Valid {
		return time.Time{}
	}
	return fromMicros(us.Int64)
}

// nullString returns s, NULL when empty.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// nullJSON returns b as TEXT, NULL when b is nil.
func nullJSON(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// scanner is *sql.Rows or *sql.Row.
type scanner interface {
	Scan(dest ...any) error
}

// rowScanner reads rows of the columns listed in columns. It reuses its
// destinations from row to row, so that reading a claim of a thousand
// jobs allocates the jobs and what they hold, not two dozen variables a
// row.
type rowScanner struct {
	j                                     driver.JobRow
	status                                string
	runAt, createdAt                      int64
	attemptedAt, finalizedAt, lockedUntil sql.NullInt64
	lockedBy, uniqueKey, attemptedBy      sql.NullString
	key, sequence                         sql.NullString
	groupID, task, callbackOf             sql.NullString
	payload, errs, result, progress       []byte
	tags, metadata, logs, dependsOn       []byte
	dest                                  []any
}

// newRowScanner returns a scanner of rows of columns.
func newRowScanner() *rowScanner {
	r := &rowScanner{}
	j := &r.j
	r.dest = []any{&j.ID, &j.Topic, &j.Queue, &j.Priority, &r.payload, &r.status,
		&j.Attempt, &j.MaxRetries, &r.runAt, &r.createdAt, &r.attemptedAt,
		&r.finalizedAt, &r.lockedUntil, &r.lockedBy, &r.uniqueKey, &r.errs, &r.result, &r.attemptedBy, &r.progress,
		&r.tags, &r.metadata, &r.logs, &r.dependsOn, &j.Waiting, &r.key, &r.sequence, &r.groupID, &r.task, &r.callbackOf}
	return r
}

// scan reads one row into a new job.
func (r *rowScanner) scan(s scanner) (*driver.JobRow, error) {
	r.j = driver.JobRow{}
	if err := s.Scan(r.dest...); err != nil {
		return nil, err
	}
	j := new(driver.JobRow)
	*j = r.j
	if len(r.dependsOn) > 0 {
		if err := json.Unmarshal(r.dependsOn, &j.DependsOn); err != nil {
			return nil, fmt.Errorf("job %s: decode dependencies: %w", j.ID, err)
		}
	}
	j.Status = driver.JobStatus(r.status)
	j.RunAt = fromMicros(r.runAt)
	j.CreatedAt = fromMicros(r.createdAt)
	j.AttemptedAt = fromNullMicros(r.attemptedAt)
	j.FinalizedAt = fromNullMicros(r.finalizedAt)
	j.LockedUntil = fromNullMicros(r.lockedUntil)
	j.LockedBy = r.lockedBy.String
	j.UniqueKey = r.uniqueKey.String
	j.Key = r.key.String
	j.Sequence = driver.SequencePolicy(r.sequence.String)
	j.GroupID, j.Task, j.CallbackOf = r.groupID.String, r.task.String, r.callbackOf.String
	j.AttemptedBy = r.attemptedBy.String
	if len(r.payload) > 0 {
		j.Payload = r.payload
	}
	if r.result != nil {
		j.Result = r.result
	}
	var err error
	if j.Errors, err = rowcodec.Errors(r.errs); err != nil {
		return nil, fmt.Errorf("job %s: decode errors: %w", j.ID, err)
	}
	if j.Progress, err = rowcodec.Progress(r.progress); err != nil {
		return nil, fmt.Errorf("job %s: decode progress: %w", j.ID, err)
	}
	if err := decodeObserved(j, r.tags, r.metadata, r.logs); err != nil {
		return nil, err
	}
	return j, nil
}

// scanRow reads one row of the columns listed in columns.
func scanRow(s scanner) (*driver.JobRow, error) {
	return newRowScanner().scan(s)
}

// scanRows reads every row of rows and closes it.
func scanRows(rows *sql.Rows) ([]*driver.JobRow, error) {
	defer rows.Close()
	var jobs []*driver.JobRow
	r := newRowScanner()
	for rows.Next() {
		j, err := r.scan(rows)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	return jobs, nil
}

// decodeObserved decodes a job's tags, metadata and logs columns into j.
func decodeObserved(j *driver.JobRow, tags, metadata, logs []byte) (err error) {
	if j.Tags, err = rowcodec.Tags(tags); err != nil {
		return fmt.Errorf("job %s: decode tags: %w", j.ID, err)
	}
	if len(metadata) > 0 {
		j.Metadata = metadata
	}
	if j.Logs, j.LogsDropped, err = rowcodec.Logs(logs); err != nil {
		return fmt.Errorf("job %s: decode logs: %w", j.ID, err)
	}
	return nil
}
