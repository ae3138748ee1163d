package pgxdriver

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sluicehq/sluice/driver"
)

// scheduleColumns are the schedules table's columns in the order
// scanSchedule reads them.
const scheduleColumns = "kind, name, cron, time_zone, topic, payload::text, queue, priority, max_retries, " +
	"disabled, catch_up, created_at, updated_at, next_run_at, last_run_at, last_job_id, version"

// schedulesTable returns the quoted, qualified table of schedules:
// <table>_schedules.
func (d *Driver) schedulesTable() string { return d.ident(d.table + "_schedules") }

// scheduleSQL returns query with {s} replaced by the schedules table and
// {cols} by its columns.
func (d *Driver) scheduleSQL(query string) string {
	return strings.NewReplacer("{s}", d.schedulesTable(), "{cols}", scheduleColumns).Replace(query)
}

// The statements on schedules; {s} is the table.
const (
	scheduleInsertSQL = `INSERT INTO {s} (kind, name, cron, time_zone, topic, payload, queue, priority, max_retries,
	disabled, catch_up, created_at, updated_at, next_run_at, last_run_at, last_job_id, version)
VALUES ($1, $2, $3, $4, $5, $6::text::jsonb, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, 1)
ON CONFLICT (kind, name) DO NOTHING RETURNING {cols}`
	scheduleGetSQL = `SELECT {cols} FROM {s} WHERE kind = $1 AND name = $2`
	// scheduleListSQL: $1 kind ('' for all), $2 due by (NULL for all).
	scheduleListSQL = `SELECT {cols} FROM {s}
WHERE ($1 = '' OR kind = $1) AND ($2::timestamptz IS NULL OR next_run_at <= $2) ORDER BY kind, name`
	scheduleUpdateSQL = `UPDATE {s} SET cron = $1, time_zone = $2, topic = $3, payload = $4::text::jsonb, queue = $5,
	priority = $6, max_retries = $7, disabled = $8, catch_up = $9, updated_at = $10, next_run_at = $11,
	version = version + 1
WHERE kind = $12 AND name = $13 AND version = $14 RETURNING {cols}`
	scheduleDeleteSQL = `DELETE FROM {s} WHERE kind = $1 AND name = $2 RETURNING {cols}`
	// scheduleTickSQL: $1 next_run_at, $2 tick (NULL keeps last_run_at),
	// $3 job ID (NULL keeps last_job_id), $4 kind, $5 name, $6 version.
	// A second ticker of the same version waits here for the first to
	// commit, then finds the version moved on and matches nothing.
	scheduleTickSQL = `UPDATE {s} SET next_run_at = $1, last_run_at = coalesce($2, last_run_at),
	last_job_id = coalesce($3, last_job_id), version = version + 1
WHERE kind = $4 AND name = $5 AND version = $6`
	scheduleLastJobSQL = `UPDATE {s} SET last_job_id = $1 WHERE kind = $2 AND name = $3`
)

// nullString returns s as a text parameter, NULL when empty.
func nullString(s string) pgtype.Text { return pgtype.Text{String: s, Valid: s != ""} }

// scanSchedule reads one row of scheduleColumns.
func scanSchedule(row pgx.Row) (*driver.ScheduleRow, error) {
	var (
		r                driver.ScheduleRow
		kind, payload    string
		nextRun, lastRun pgtype.Timestamptz
		lastJob          pgtype.Text
	)
	if err := row.Scan(&kind, &r.Name, &r.Cron, &r.TimeZone, &r.Topic, &payload, &r.Queue, &r.Priority,
		&r.MaxRetries, &r.Disabled, &r.CatchUp, &r.CreatedAt, &r.UpdatedAt, &nextRun, &lastRun, &lastJob,
		&r.Version); err != nil {
		return nil, err
	}
	r.Kind, r.Payload = driver.ScheduleKind(kind), []byte(payload)
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
	r.NextRunAt, r.LastRunAt, r.LastJobID = fromNullTime(nextRun), fromNullTime(lastRun), lastJob.String
	return &r, nil
}

// scheduleOne runs query, which returns at most one schedule; nil when it
// returns none.
func scheduleOne(ctx context.Context, db dbtx, query string, args ...any) (*driver.ScheduleRow, error) {
	s, err := scanSchedule(db.QueryRow(ctx, query, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return s, err
}

// ScheduleInsert stores a new schedule unless one of its kind has its
// name.
func (e *executor) ScheduleInsert(ctx context.Context, p *driver.ScheduleInsertParams) (*driver.ScheduleRow, error) {
	const op = "insert schedule"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil || p.Schedule == nil {
		return nil, errors.New("pgxdriver: insert schedule: nil params")
	}
	s := p.Schedule
	if err := driver.CheckKey("schedule", string(s.Kind), s.Name); err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	out, err := scheduleOne(ctx, e.db, e.d.scheduleSQL(scheduleInsertSQL), string(s.Kind), s.Name, s.Cron, s.TimeZone,
		s.Topic, string(s.Payload), s.Queue, s.Priority, s.MaxRetries, s.Disabled, s.CatchUp, s.CreatedAt,
		s.UpdatedAt, nullTime(s.NextRunAt), nullTime(s.LastRunAt), nullString(s.LastJobID))
	if err == nil && out == nil {
		err = driver.ErrDuplicateSchedule
	}
	return out, wrapErr(ctx, op, err)
}

// ScheduleGet reads one schedule.
func (e *executor) ScheduleGet(ctx context.Context, p *driver.ScheduleGetParams) (*driver.ScheduleRow, error) {
	if p == nil {
		return nil, errors.New("pgxdriver: get schedule: nil params")
	}
	return e.scheduleNamed(ctx, "get schedule", scheduleGetSQL, p.Kind, p.Name)
}

// scheduleNamed runs query, which selects or deletes the schedule kind/name
// and returns it, or ErrScheduleNotFound.
func (e *executor) scheduleNamed(ctx context.Context, op, query string, kind driver.ScheduleKind, name string) (*driver.ScheduleRow, error) {
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if !driver.Matchable(string(kind), name) {
		return nil, wrapErr(ctx, op, driver.ErrScheduleNotFound)
	}
	out, err := scheduleOne(ctx, e.db, e.d.scheduleSQL(query), string(kind), name)
	if err == nil && out == nil {
		err = driver.ErrScheduleNotFound
	}
	return out, wrapErr(ctx, op, err)
}

// ScheduleList reads the schedules of a kind, or the due ones.
func (e *executor) ScheduleList(ctx context.Context, p *driver.ScheduleListParams) ([]*driver.ScheduleRow, error) {
	const op = "list schedules"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("pgxdriver: list schedules: nil params")
	}
	if !driver.Matchable(string(p.Kind)) {
		return []*driver.ScheduleRow{}, nil // no such kind
	}
	rows, err := e.db.Query(ctx, e.d.scheduleSQL(scheduleListSQL), string(p.Kind), nullTime(p.DueBy))
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	out := []*driver.ScheduleRow{}
	for rows.Next() {
		s, err := scanSchedule(rows)
		if err != nil {
			rows.Close()
			return nil, wrapErr(ctx, op, err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	return out, nil
}

// ScheduleUpdate replaces a schedule's definition if its version matches.
func (e *executor) ScheduleUpdate(ctx context.Context, p *driver.ScheduleUpdateParams) (*driver.ScheduleRow, error) {
	const op = "update schedule"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil || p.Schedule == nil {
		return nil, errors.New("pgxdriver: update schedule: nil params")
	}
	s := p.Schedule
	if !driver.Matchable(string(s.Kind), s.Name) {
		return nil, nil // no such schedule
	}
	out, err := scheduleOne(ctx, e.db, e.d.scheduleSQL(scheduleUpdateSQL), s.Cron, s.TimeZone, s.Topic,
		string(s.Payload), s.Queue, s.Priority, s.MaxRetries, s.Disabled, s.CatchUp, s.UpdatedAt,
		nullTime(s.NextRunAt), string(s.Kind), s.Name, p.Version)
	return out, wrapErr(ctx, op, err)
}

// ScheduleDelete deletes a schedule.
func (e *executor) ScheduleDelete(ctx context.Context, p *driver.ScheduleDeleteParams) (*driver.ScheduleRow, error) {
	if p == nil {
		return nil, errors.New("pgxdriver: delete schedule: nil params")
	}
	return e.scheduleNamed(ctx, "delete schedule", scheduleDeleteSQL, p.Kind, p.Name)
}

// ScheduleTick records a tick by a compare-and-set on the version and
// inserts its job, in one transaction (the caller's, or one of its own).
func (e *executor) ScheduleTick(ctx context.Context, p *driver.ScheduleTickParams) (*driver.ScheduleTickResult, error) {
	const op = "tick schedule"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("pgxdriver: tick schedule: nil params")
	}
	if !driver.Matchable(string(p.Kind), p.Name) {
		return &driver.ScheduleTickResult{}, nil // no such schedule
	}
	var lastRun pgtype.Timestamptz
	var jobID pgtype.Text
	if p.Job != nil {
		if p.Job.UniqueKey == "" {
			return nil, errors.New("pgxdriver: tick schedule: the job has no unique key")
		}
		lastRun, jobID = nullTime(p.Tick), nullString(p.Job.ID)
	}
	out := &driver.ScheduleTickResult{}
	err := e.atomic(ctx, func(db dbtx) error {
		*out = driver.ScheduleTickResult{}
		tag, err := db.Exec(ctx, e.d.scheduleSQL(scheduleTickSQL), nullTime(p.NextRunAt), lastRun, jobID,
			string(p.Kind), p.Name, p.Version)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		out.Matched = true
		if p.Job == nil {
			return nil
		}
		in := &executor{d: e.d, db: db, inTx: true}
		res, err := in.JobInsertMany(ctx, &driver.JobInsertManyParams{Jobs: []*driver.JobInsert{p.Job}})
		if err != nil {
			return err
		}
		out.Job = &res[0]
		if !res[0].Duplicate {
			return nil
		}
		_, err = db.Exec(ctx, e.d.scheduleSQL(scheduleLastJobSQL), res[0].Job.ID, string(p.Kind), p.Name)
		return err
	})
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	return out, nil
}
