package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/rowcodec"
)

// scheduleColumns are the schedules table's columns in the order
// scanSchedule reads them.
const scheduleColumns = "kind, name, cron, time_zone, topic, payload, queue, priority, max_retries, " +
	"disabled, catch_up, created_at, updated_at, next_run_at, last_run_at, last_job_id, version"

// sqlSchedules returns the schedules table's name quoted for SQL.
func (d *Driver) sqlSchedules() string { return quoteIdent(d.table + "_schedules") }

// scheduleSQL returns query with {s} replaced by the schedules table and
// {cols} by its columns.
func (d *Driver) scheduleSQL(query string) string {
	return strings.NewReplacer("{s}", d.sqlSchedules(), "{cols}", scheduleColumns).Replace(query)
}

// The statements on schedules; {s} is the table.
const (
	scheduleInsertSQL = `INSERT INTO {s} ({cols}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)
ON CONFLICT (kind, name) DO NOTHING RETURNING {cols}`
	scheduleGetSQL = `SELECT {cols} FROM {s} WHERE kind = ? AND name = ?`
	// scheduleListSQL: ?1 kind ('' for all), ?2 due by (NULL for all).
	scheduleListSQL = `SELECT {cols} FROM {s}
WHERE (?1 = '' OR kind = ?1) AND (?2 IS NULL OR next_run_at <= ?2) ORDER BY kind, name`
	scheduleUpdateSQL = `UPDATE {s} SET cron = ?, time_zone = ?, topic = ?, payload = ?, queue = ?, priority = ?,
	max_retries = ?, disabled = ?, catch_up = ?, updated_at = ?, next_run_at = ?, version = version + 1
WHERE kind = ? AND name = ? AND version = ? RETURNING {cols}`
	scheduleDeleteSQL = `DELETE FROM {s} WHERE kind = ? AND name = ? RETURNING {cols}`
	// scheduleTickSQL: ?1 next_run_at, ?2 tick (NULL keeps last_run_at),
	// ?3 job ID (NULL keeps last_job_id), ?4 kind, ?5 name, ?6 version.
	scheduleTickSQL = `UPDATE {s} SET next_run_at = ?1, last_run_at = coalesce(?2, last_run_at),
	last_job_id = coalesce(?3, last_job_id), version = version + 1
WHERE kind = ?4 AND name = ?5 AND version = ?6`
	scheduleLastJobSQL = `UPDATE {s} SET last_job_id = ? WHERE kind = ? AND name = ?`
)

// scheduleArgs returns the values of s for scheduleInsertSQL, version
// aside.
func scheduleArgs(s *driver.ScheduleRow) []any {
	return []any{string(s.Kind), s.Name, s.Cron, s.TimeZone, s.Topic, string(s.Payload), s.Queue,
		int64(s.Priority), int64(s.MaxRetries), s.Disabled, s.CatchUp, micros(s.CreatedAt), micros(s.UpdatedAt),
		nullMicros(s.NextRunAt), nullMicros(s.LastRunAt), nullString(s.LastJobID)}
}

// scanSchedule reads one row of scheduleColumns.
func scanSchedule(s scanner) (*driver.ScheduleRow, error) {
	var (
		r                 driver.ScheduleRow
		kind, payload     string
		created, updated  int64
		nextRun, lastRun  sql.NullInt64
		lastJob           sql.NullString
		priority, retries int64
	)
	if err := s.Scan(&kind, &r.Name, &r.Cron, &r.TimeZone, &r.Topic, &payload, &r.Queue, &priority, &retries,
		&r.Disabled, &r.CatchUp, &created, &updated, &nextRun, &lastRun, &lastJob, &r.Version); err != nil {
		return nil, err
	}
	r.Kind, r.Payload = driver.ScheduleKind(kind), []byte(payload)
	r.Priority, r.MaxRetries = int(priority), int(retries)
	r.CreatedAt, r.UpdatedAt = fromMicros(created), fromMicros(updated)
	r.NextRunAt, r.LastRunAt, r.LastJobID = fromNullMicros(nextRun), fromNullMicros(lastRun), lastJob.String
	return &r, nil
}

// scheduleOne runs query, which returns at most one schedule, through r;
// nil when it returns none.
func scheduleOne(ctx context.Context, r runner, query string, args ...any) (*driver.ScheduleRow, error) {
	rows, err := r.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, rows.Err()
	}
	s, err := scanSchedule(rows)
	if err != nil {
		return nil, err
	}
	return s, rows.Close()
}

// ScheduleInsert stores a new schedule unless one of its kind has its
// name.
func (e *executor) ScheduleInsert(ctx context.Context, p *driver.ScheduleInsertParams) (*driver.ScheduleRow, error) {
	const op = "insert schedule"
	if p == nil || p.Schedule == nil {
		return nil, errors.New("sqlitedriver: insert schedule: nil params")
	}
	if err := driver.CheckKey("schedule", string(p.Schedule.Kind), p.Schedule.Name); err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	var out *driver.ScheduleRow
	err := e.write(ctx, op, func(r runner) error {
		var err error
		out, err = scheduleOne(ctx, r, e.d.scheduleSQL(scheduleInsertSQL), scheduleArgs(p.Schedule)...)
		if err == nil && out == nil {
			err = driver.ErrDuplicateSchedule
		}
		return err
	})
	return out, err
}

// ScheduleGet reads one schedule.
func (e *executor) ScheduleGet(ctx context.Context, p *driver.ScheduleGetParams) (*driver.ScheduleRow, error) {
	if p == nil {
		return nil, errors.New("sqlitedriver: get schedule: nil params")
	}
	return e.scheduleNamed(ctx, "get schedule", scheduleGetSQL, p.Kind, p.Name, e.read)
}

// scheduleNamed runs query through run (a read or a write), which selects
// or deletes the schedule kind/name and returns it, or ErrScheduleNotFound.
func (e *executor) scheduleNamed(ctx context.Context, op, query string, kind driver.ScheduleKind, name string,
	run func(ctx context.Context, op string, fn func(r runner) error) error) (*driver.ScheduleRow, error) {
	var out *driver.ScheduleRow
	err := run(ctx, op, func(r runner) error {
		var err error
		out, err = scheduleOne(ctx, r, e.d.scheduleSQL(query), string(kind), name)
		if err == nil && out == nil {
			err = driver.ErrScheduleNotFound
		}
		return err
	})
	return out, err
}

// ScheduleList reads the schedules of a kind, or the due ones.
func (e *executor) ScheduleList(ctx context.Context, p *driver.ScheduleListParams) ([]*driver.ScheduleRow, error) {
	if p == nil {
		return nil, errors.New("sqlitedriver: list schedules: nil params")
	}
	out := []*driver.ScheduleRow{}
	err := e.read(ctx, "list schedules", func(r runner) error {
		rows, err := r.query(ctx, e.d.scheduleSQL(scheduleListSQL), string(p.Kind), nullMicros(p.DueBy))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			s, err := scanSchedule(rows)
			if err != nil {
				return err
			}
			out = append(out, s)
		}
		return rows.Close()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ScheduleUpdate replaces a schedule's definition if its version matches.
func (e *executor) ScheduleUpdate(ctx context.Context, p *driver.ScheduleUpdateParams) (*driver.ScheduleRow, error) {
	if p == nil || p.Schedule == nil {
		return nil, errors.New("sqlitedriver: update schedule: nil params")
	}
	s := p.Schedule
	var out *driver.ScheduleRow
	err := e.write(ctx, "update schedule", func(r runner) error {
		var err error
		out, err = scheduleOne(ctx, r, e.d.scheduleSQL(scheduleUpdateSQL), s.Cron, s.TimeZone, s.Topic,
			string(s.Payload), s.Queue, int64(s.Priority), int64(s.MaxRetries), s.Disabled, s.CatchUp,
			micros(s.UpdatedAt), nullMicros(s.NextRunAt), string(s.Kind), s.Name, p.Version)
		return err
	})
	return out, err
}

// ScheduleDelete deletes a schedule.
func (e *executor) ScheduleDelete(ctx context.Context, p *driver.ScheduleDeleteParams) (*driver.ScheduleRow, error) {
	if p == nil {
		return nil, errors.New("sqlitedriver: delete schedule: nil params")
	}
	return e.scheduleNamed(ctx, "delete schedule", scheduleDeleteSQL, p.Kind, p.Name, e.write)
}

// ScheduleTick records a tick by a compare-and-set on the version and
// inserts its job, in one transaction.
func (e *executor) ScheduleTick(ctx context.Context, p *driver.ScheduleTickParams) (*driver.ScheduleTickResult, error) {
	if p == nil {
		return nil, errors.New("sqlitedriver: tick schedule: nil params")
	}
	tick, lastRun, jobID := e.d.scheduleSQL(scheduleTickSQL), any(nil), any(nil)
	queries := []string{tick}
	if p.Job != nil {
		if p.Job.UniqueKey == "" {
			return nil, errors.New("sqlitedriver: tick schedule: the job has no unique key")
		}
		lastRun, jobID = micros(p.Tick), p.Job.ID
		queries = append(queries, e.d.q.insertUnique, e.d.q.selectLiveByKey, e.d.scheduleSQL(scheduleLastJobSQL))
	}
	out := &driver.ScheduleTickResult{}
	err := e.writeTx(ctx, "tick schedule", queries, func(r runner) error {
		*out = driver.ScheduleTickResult{}
		res, err := r.exec(ctx, tick, nullMicros(p.NextRunAt), lastRun, jobID, string(p.Kind), p.Name, p.Version)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		out.Matched = true
		if p.Job == nil {
			return nil
		}
		dup, err := insertUnique(ctx, r, e.d.q, p.Job)
		if err != nil {
			return err
		}
		if dup == nil {
			out.Job = &driver.JobInsertResult{Job: rowcodec.NewRow(p.Job)}
			return nil
		}
		out.Job = &driver.JobInsertResult{Job: dup, Duplicate: true}
		_, err = r.exec(ctx, e.d.scheduleSQL(scheduleLastJobSQL), dup.ID, string(p.Kind), p.Name)
		return err
	})
	if err != nil {
		return nil, err
	}
	if out.Job != nil {
		e.d.hub.notifyInserted([]driver.JobInsertResult{*out.Job}, e.tx == nil)
	}
	return out, nil
}
