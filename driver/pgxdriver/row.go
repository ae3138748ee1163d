package pgxdriver

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
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

// uuidString returns u as text, empty when NULL.
func uuidString(u pgtype.UUID) string {
	if !u.Valid {
		return ""
	}
	return uuid.UUID(u.Bytes).String()
}

// errorJSON returns e as stored in the errors column, its time in UTC.
func errorJSON(e *driver.AttemptError) ([]byte, error) {
	c := *e
	c.At = c.At.UTC()
	c.StartedAt = rowcodec.Stored(c.StartedAt)
	// jsonb cannot hold the NUL character; an error that carried one would
	// otherwise never be recorded (see the text rule in package driver).
	c.Error = driver.CleanText(c.Error, 0)
	c.Trace = driver.CleanText(c.Trace, 0)
	return json.Marshal(c)
}

// scanRow reads one row of the columns listed in columns, after the
// leading destinations lead.
func scanRow(s pgx.Row, lead ...any) (*driver.JobRow, error) {
	var r rowScanner
	r.init(false, lead)
	return r.scan(s)
}

// scanRows reads every row of rows and closes it.
func scanRows(rows pgx.Rows) ([]*driver.JobRow, error) {
	jobs, _, err := readRows(rows, true)
	return jobs, err
}

// readRows reads every row of rows and closes it: from their wire format
// where it can with wire, else through pgx's Scan. It returns how many
// rows were read from the wire format.
func readRows(rows pgx.Rows, wire bool) (jobs []*driver.JobRow, wired int, err error) {
	defer rows.Close()
	var r rowScanner
	r.init(true, nil)
	for first := true; rows.Next(); first = false {
		if first {
			// Only once a row arrived: a query that failed has no
			// fields to describe (pgx's FieldDescriptions panics).
			wire = wire && r.wireReadable(rows.FieldDescriptions())
		}
		var j *driver.JobRow
		if wire && r.decode(rows.RawValues()) {
			wired++
			j, err = r.job()
		} else {
			j, err = r.scan(rows)
		}
		if err != nil {
			return nil, wired, err
		}
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, wired, err
	}
	return jobs, wired, nil
}

// rowScanner reads rows of the columns listed in columns. It reuses its
// destinations from row to row, and the strings that repeat from job to
// job (topic, queue, status, client), so that reading a claim of a
// thousand jobs allocates the jobs and little else.
type rowScanner struct {
	id                                    string
	priority, attempt, maxRetries         int
	runAt, createdAt                      time.Time
	attemptedAt, finalizedAt, lockedUntil pgtype.Timestamptz
	topic, queue, status, lockedBy        []byte
	uniqueKey, attemptedBy, key, sequence []byte
	task                                  []byte
	groupID, callbackOf                   pgtype.UUID
	payload, errs, result, progress       []byte
	tags                                  []string
	metadata, logs, dependsOn             []byte
	waiting                               bool
	jsonbBinary                           bool
	dest                                  []any
	names                                 map[string]string
}

// init sets the destinations up, after the leading ones lead. With
// borrowed, the text columns are read as references into the driver's
// buffer, valid until the next row (pgtype.DriverBytes), which pgx.Rows
// allows and a row from QueryRow does not.
func (r *rowScanner) init(borrowed bool, lead []any) {
	text := func(b *[]byte) any {
		if borrowed {
			return (*pgtype.DriverBytes)(b)
		}
		return b
	}
	r.dest = append(lead, &r.id, text(&r.topic), text(&r.queue), &r.priority, &r.payload, text(&r.status),
		&r.attempt, &r.maxRetries, &r.runAt, &r.createdAt, &r.attemptedAt,
		&r.finalizedAt, &r.lockedUntil, text(&r.lockedBy), text(&r.uniqueKey), &r.errs, &r.result,
		text(&r.attemptedBy), &r.progress, &r.tags, &r.metadata, &r.logs,
		&r.dependsOn, &r.waiting, text(&r.key), text(&r.sequence), &r.groupID, text(&r.task), &r.callbackOf)
}

// scan reads one row into a new job.
func (r *rowScanner) scan(s pgx.Row) (*driver.JobRow, error) {
	r.payload, r.errs, r.result, r.progress = nil, nil, nil, nil
	r.tags, r.metadata, r.logs, r.dependsOn = nil, nil, nil, nil
	if err := s.Scan(r.dest...); err != nil {
		return nil, err
	}
	return r.job()
}

// job returns a new job of the values read last.
func (r *rowScanner) job() (*driver.JobRow, error) {
	j := &driver.JobRow{
		ID: r.id, Topic: r.name(r.topic), Queue: r.name(r.queue), Priority: r.priority,
		Status: driver.JobStatus(r.name(r.status)), Attempt: r.attempt, MaxRetries: r.maxRetries,
		RunAt: r.runAt.UTC(), CreatedAt: r.createdAt.UTC(), AttemptedAt: fromNullTime(r.attemptedAt),
		FinalizedAt: fromNullTime(r.finalizedAt), LockedUntil: fromNullTime(r.lockedUntil),
		LockedBy: r.name(r.lockedBy), UniqueKey: string(r.uniqueKey), AttemptedBy: r.name(r.attemptedBy),
		Key: string(r.key), Sequence: driver.SequencePolicy(r.name(r.sequence)),
		GroupID: uuidString(r.groupID), Task: string(r.task), CallbackOf: uuidString(r.callbackOf),
	}
	if len(r.payload) > 0 {
		j.Payload = r.payload
	}
	if len(r.result) > 0 {
		j.Result = r.result
	}
	var err error
	if j.Errors, err = rowcodec.Errors(r.errs); err != nil {
		return nil, fmt.Errorf("job %s: decode errors: %w", j.ID, err)
	}
	if j.Progress, err = rowcodec.Progress(r.progress); err != nil {
		return nil, fmt.Errorf("job %s: decode progress: %w", j.ID, err)
	}
	if len(r.tags) > 0 {
		j.Tags = r.tags
	}
	if len(r.metadata) > 0 {
		j.Metadata = r.metadata
	}
	if j.Logs, j.LogsDropped, err = rowcodec.Logs(r.logs); err != nil {
		return nil, fmt.Errorf("job %s: decode logs: %w", j.ID, err)
	}
	if len(r.dependsOn) > 0 {
		if err := json.Unmarshal(r.dependsOn, &j.DependsOn); err != nil {
			return nil, fmt.Errorf("job %s: decode dependencies: %w", j.ID, err)
		}
	}
	j.Waiting = r.waiting
	return j, nil
}

// name returns b as a string, the same string for the same bytes within
// one scanner.
func (r *rowScanner) name(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if s, ok := r.names[string(b)]; ok {
		return s
	}
	if r.names == nil {
		r.names = make(map[string]string)
	}
	s := string(b)
	r.names[s] = s
	return s
}
