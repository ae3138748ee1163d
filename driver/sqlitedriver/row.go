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

// scanRow reads one row of the columns listed in columns.
func scanRow(s scanner) (*driver.JobRow, error) {
	var (
		j                                     driver.JobRow
		status                                string
		runAt, createdAt                      int64
		attemptedAt, finalizedAt, lockedUntil sql.NullInt64
		lockedBy, uniqueKey, attemptedBy      sql.NullString
		key, sequence                         sql.NullString
		groupID, task, callbackOf             sql.NullString
		payload, errs, result, progress       []byte
		tags, metadata, logs, dependsOn       []byte
	)
	err := s.Scan(&j.ID, &j.Topic, &j.Queue, &j.Priority, &payload, &status,
		&j.Attempt, &j.MaxRetries, &runAt, &createdAt, &attemptedAt,
		&finalizedAt, &lockedUntil, &lockedBy, &uniqueKey, &errs, &result, &attemptedBy, &progress,
		&tags, &metadata, &logs, &dependsOn, &j.Waiting, &key, &sequence, &groupID, &task, &callbackOf)
	if err != nil {
		return nil, err
	}
	if len(dependsOn) > 0 {
		if err := json.Unmarshal(dependsOn, &j.DependsOn); err != nil {
			return nil, fmt.Errorf("job %s: decode dependencies: %w", j.ID, err)
		}
	}
	j.Status = driver.JobStatus(status)
	j.RunAt = fromMicros(runAt)
	j.CreatedAt = fromMicros(createdAt)
	j.AttemptedAt = fromNullMicros(attemptedAt)
	j.FinalizedAt = fromNullMicros(finalizedAt)
	j.LockedUntil = fromNullMicros(lockedUntil)
	j.LockedBy = lockedBy.String
	j.UniqueKey = uniqueKey.String
	j.Key = key.String
	j.Sequence = driver.SequencePolicy(sequence.String)
	j.GroupID, j.Task, j.CallbackOf = groupID.String, task.String, callbackOf.String
	j.AttemptedBy = attemptedBy.String
	if len(payload) > 0 {
		j.Payload = payload
	}
	if result != nil {
		j.Result = result
	}
	if j.Errors, err = rowcodec.Errors(errs); err != nil {
		return nil, fmt.Errorf("job %s: decode errors: %w", j.ID, err)
	}
	if j.Progress, err = rowcodec.Progress(progress); err != nil {
		return nil, fmt.Errorf("job %s: decode progress: %w", j.ID, err)
	}
	if err := decodeObserved(&j, tags, metadata, logs); err != nil {
		return nil, err
	}
	return &j, nil
}

// scanRows reads every row of rows and closes it.
func scanRows(rows *sql.Rows) ([]*driver.JobRow, error) {
	defer rows.Close()
	var jobs []*driver.JobRow
	for rows.Next() {
		j, err := scanRow(rows)
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
