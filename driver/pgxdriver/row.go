package pgxdriver

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/rowcodec"
)

// nullTime returns t as a parameter, NULL when t is zero.
func nullTime(t time.Time) pgtype.Timestamptz {
	return pgtype.Timestamptz{Time: t, Valid: !t.IsZero()}
}

// fromNullTime returns the time read from a nullable column, zero when
// NULL, in UTC.
func fromNullTime(t pgtype.Timestamptz) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

// nullText returns b as a text parameter, NULL when b is nil.
func nullText(b []byte) pgtype.Text {
	return pgtype.Text{String: string(b), Valid: b != nil}
}

// parseUUID parses id as Postgres would; ok is false when id is not a
// UUID, so no job can have it.
func parseUUID(id string) (u pgtype.UUID, ok bool) {
	if err := u.Scan(id); err != nil || !u.Valid {
		return pgtype.UUID{}, false
	}
	return u, true
}

// errorJSON returns e as stored in the errors column, its time in UTC.
func errorJSON(e *driver.AttemptError) ([]byte, error) {
	c := *e
	c.At = c.At.UTC()
	c.StartedAt = rowcodec.Stored(c.StartedAt)
	// jsonb cannot hold the NUL character; an error that carried one would
	// otherwise never be recorded.
	c.Error = strings.ReplaceAll(c.Error, "\x00", "\uFFFD")
	c.Trace = strings.ReplaceAll(c.Trace, "\x00", "\uFFFD")
	return json.Marshal(c)
}

// scanRow reads one row of the columns listed in columns, after the
// leading destinations lead.
func scanRow(s pgx.Row, lead ...any) (*driver.JobRow, error) {
	var (
		j                                     driver.JobRow
		status                                string
		runAt, createdAt                      time.Time
		attemptedAt, finalizedAt, lockedUntil pgtype.Timestamptz
		lockedBy, uniqueKey, attemptedBy      pgtype.Text
		payload, errs, result, progress       []byte
	)
	dest := append(lead, &j.ID, &j.Topic, &j.Queue, &j.Priority, &payload, &status,
		&j.Attempt, &j.MaxRetries, &runAt, &createdAt, &attemptedAt,
		&finalizedAt, &lockedUntil, &lockedBy, &uniqueKey, &errs, &result, &attemptedBy, &progress)
	if err := s.Scan(dest...); err != nil {
		return nil, err
	}
	j.Status = driver.JobStatus(status)
	j.RunAt = runAt.UTC()
	j.CreatedAt = createdAt.UTC()
	j.AttemptedAt = fromNullTime(attemptedAt)
	j.FinalizedAt = fromNullTime(finalizedAt)
	j.LockedUntil = fromNullTime(lockedUntil)
	j.LockedBy = lockedBy.String
	j.UniqueKey = uniqueKey.String
	j.AttemptedBy = attemptedBy.String
	if len(payload) > 0 {
		j.Payload = payload
	}
	if len(result) > 0 {
		j.Result = result
	}
	var err error
	if j.Errors, err = rowcodec.Errors(errs); err != nil {
		return nil, fmt.Errorf("job %s: decode errors: %w", j.ID, err)
	}
	if j.Progress, err = rowcodec.Progress(progress); err != nil {
		return nil, fmt.Errorf("job %s: decode progress: %w", j.ID, err)
	}
	return &j, nil
}

// scanRows reads every row of rows and closes it.
func scanRows(rows pgx.Rows) ([]*driver.JobRow, error) {
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
	return jobs, nil
}
