package pgxdriver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/filtersql"
)

// cancellable selects the jobs a cancel changes: live ones, and failed
// ones that hold their sequence.
const cancellable = driver.CancellableSQL

// JobCancel cancels the selected live jobs, and failed ones that hold
// their sequence, with one UPDATE.
func (e *executor) JobCancel(ctx context.Context, p *driver.JobActParams) ([]*driver.JobRow, error) {
	return e.act(ctx, "cancel", p, func(q *filtersql.Query) string {
		now := q.Arg(p.Now)
		q.Cond(cancellable)
		return `UPDATE ` + e.d.Table() + ` AS j SET status = 'cancelled', finalized_at = ` + now + `,
	locked_by = NULL, locked_until = NULL, run_at = coalesce(j.wait_run_at, j.run_at), wait_policy = NULL,
	wait_run_at = NULL ` + q.Where() + ` RETURNING ` + columns
	})
}

// JobRequeue makes the selected finished, unsuccessful jobs pending again
// with one UPDATE, noted in the log of actions.
func (e *executor) JobRequeue(ctx context.Context, p *driver.JobActParams) ([]*driver.JobRow, error) {
	if p == nil {
		return nil, errors.New("pgxdriver: requeue: nil params")
	}
	entry, err := errorJSON(&driver.AttemptError{At: p.Now, Error: driver.RequeuedError})
	if err != nil {
		return nil, fmt.Errorf("pgxdriver: requeue: %w", err)
	}
	return e.act(ctx, "requeue", p, e.logActs(p, func(q *filtersql.Query) string {
		now, retries := q.Arg(p.Now), q.Arg(p.Retries)
		elem := "jsonb_set(" + q.Arg(string(entry)) + "::text::jsonb, '{attempt}', to_jsonb(j.attempt))"
		q.In("status", []string{string(driver.StatusFailed), string(driver.StatusCancelled)})
		return `UPDATE ` + e.d.Table() + ` AS j SET status = 'pending', run_at = ` + now + `,
	finalized_at = NULL, max_retries = j.attempt + ` + retries + `::int, errors = ` + appendError(elem) + ` ` +
			q.Where() + ` RETURNING ` + columns
	}))
}

// JobDelete deletes the selected jobs that are not processing with one
// DELETE, noted in the log of actions.
func (e *executor) JobDelete(ctx context.Context, p *driver.JobActParams) ([]*driver.JobRow, error) {
	return e.act(ctx, "delete", p, e.logActs(p, func(q *filtersql.Query) string {
		q.Cond("status <> 'processing'")
		return `DELETE FROM ` + e.d.Table() + ` AS j ` + q.Where() + ` RETURNING ` + columns
	}))
}

// JobRetryNow makes the selected pending jobs due now with one UPDATE;
// waiting jobs wait on.
func (e *executor) JobRetryNow(ctx context.Context, p *driver.JobActParams) ([]*driver.JobRow, error) {
	return e.act(ctx, "retry now", p, func(q *filtersql.Query) string {
		now := q.Arg(p.Now)
		q.Cond("status = 'pending'")
		q.Cond("run_at > " + now)
		q.Cond("wait_policy IS NULL")
		return `UPDATE ` + e.d.Table() + ` AS j SET run_at = ` + now + ` ` + q.Where() + ` RETURNING ` + columns
	})
}

// act runs the statement build returns for the jobs p selects and returns
// the rows it returns, sorted by ID. build adds its own arguments and
// conditions to the selection.
func (e *executor) act(ctx context.Context, op string, p *driver.JobActParams, build func(q *filtersql.Query) string) ([]*driver.JobRow, error) {
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, fmt.Errorf("pgxdriver: %s: nil params", op)
	}
	q := filtersql.New(dialect, &p.Filter)
	if p.IDs != nil {
		ids := uuids(p.IDs)
		if len(ids) == 0 {
			return []*driver.JobRow{}, nil
		}
		q = filtersql.New(dialect, &driver.JobFilter{})
		q.Cond("id = ANY(" + q.Arg(ids) + "::uuid[])")
	}
	rows, err := e.db.Query(ctx, build(q), q.Args...)
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	jobs, err := scanRows(rows)
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	if jobs == nil {
		jobs = []*driver.JobRow{}
	}
	slices.SortFunc(jobs, func(a, b *driver.JobRow) int { return cmp.Compare(a.ID, b.ID) })
	return jobs, nil
}

// uuids returns the IDs that are UUIDs; the others name no job.
func uuids(ids []string) []pgtype.UUID {
	out := make([]pgtype.UUID, 0, len(ids))
	for _, id := range ids {
		if u, ok := parseUUID(id); ok {
			out = append(out, u)
		}
	}
	return out
}

// JobHeld reads which of the jobs are still held by the client.
func (e *executor) JobHeld(ctx context.Context, p *driver.JobHeldParams) ([]string, error) {
	const op = "held"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("pgxdriver: held: nil params")
	}
	if !driver.Matchable(p.ClientID) {
		return []string{}, nil // no such client
	}
	rows, err := e.db.Query(ctx, `SELECT id::text FROM `+e.d.Table()+`
WHERE id = ANY($1::uuid[]) AND status = 'processing' AND locked_by = $2 ORDER BY id`, uuids(p.IDs), p.ClientID)
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	held, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	if held == nil {
		held = []string{}
	}
	return held, nil
}

// JobClean deletes one batch of old finished jobs, found through the
// finalized index and locked with SKIP LOCKED, so cleaners running at once
// take different rows and never wait.
func (e *executor) JobClean(ctx context.Context, p *driver.JobCleanParams) (int, error) {
	const op = "clean"
	if err := e.start(ctx, op); err != nil {
		return 0, err
	}
	if p == nil {
		return 0, errors.New("pgxdriver: clean: nil params")
	}
	if !driver.Matchable(string(p.Status)) {
		return 0, nil // no such status
	}
	q := filtersql.Clean(dialect, p)
	tag, err := e.db.Exec(ctx, `DELETE FROM `+e.d.Table()+` WHERE id IN (
	SELECT id FROM `+e.d.Table()+" "+q.Where()+`
	LIMIT `+q.Arg(p.Limit)+`
	FOR UPDATE SKIP LOCKED)`, q.Args...)
	if err != nil {
		return 0, wrapErr(ctx, op, err)
	}
	return int(tag.RowsAffected()), nil
}
