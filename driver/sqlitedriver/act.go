package sqlitedriver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/filtersql"
	"github.com/sluicehq/sluice/driver/internal/rowcodec"
)

// cancellable selects the jobs a cancel changes: live ones, and failed
// ones that hold their sequence.
const cancellable = driver.CancellableSQL

// JobCancel cancels the selected live jobs, and failed ones that hold
// their sequence, with one UPDATE ... RETURNING.
func (e *executor) JobCancel(ctx context.Context, p *driver.JobActParams) ([]*driver.JobRow, error) {
	return e.act(ctx, "cancel", p, false, func(q *filtersql.Query) string {
		now := q.Arg(micros(p.Now))
		q.Cond(cancellable)
		return `UPDATE ` + e.d.sqlTable() + ` SET status = 'cancelled', finalized_at = ` + now + `,
	locked_by = NULL, locked_until = NULL, run_at = coalesce(wait_run_at, run_at), wait_policy = NULL,
	wait_run_at = NULL ` + q.Where() + ` RETURNING ` + columns
	})
}

// JobRequeue makes the selected finished, unsuccessful jobs pending again
// with one UPDATE ... RETURNING, noted in the log of actions.
func (e *executor) JobRequeue(ctx context.Context, p *driver.JobActParams) ([]*driver.JobRow, error) {
	if p == nil {
		return nil, errors.New("sqlitedriver: requeue: nil params")
	}
	entry, err := json.Marshal(driver.AttemptError{At: rowcodec.Stored(p.Now), Error: driver.RequeuedError})
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: requeue: %w", err)
	}
	return e.act(ctx, "requeue", p, true, func(q *filtersql.Query) string {
		now, retries := q.Arg(micros(p.Now)), q.Arg(p.Retries)
		elem := "json_set(" + q.Arg(string(entry)) + ", '$.attempt', attempt)"
		errs := strings.ReplaceAll(appendError(elem), "{maxErrors}", strconv.Itoa(driver.MaxErrorsKept))
		q.In("status", []string{string(driver.StatusFailed), string(driver.StatusCancelled)})
		return `UPDATE ` + e.d.sqlTable() + ` SET status = 'pending', run_at = ` + now + `,
	finalized_at = NULL, max_retries = attempt + ` + retries + `, errors = ` + errs + ` ` +
			q.Where() + ` RETURNING ` + columns
	})
}

// JobDelete deletes the selected jobs that are not processing with one
// DELETE ... RETURNING, noted in the log of actions.
func (e *executor) JobDelete(ctx context.Context, p *driver.JobActParams) ([]*driver.JobRow, error) {
	return e.act(ctx, "delete", p, true, func(q *filtersql.Query) string {
		q.Cond("status <> 'processing'")
		return `DELETE FROM ` + e.d.sqlTable() + ` ` + q.Where() + ` RETURNING ` + columns
	})
}

// JobRetryNow makes the selected pending jobs due now with one UPDATE ...
// RETURNING; waiting jobs wait on.
func (e *executor) JobRetryNow(ctx context.Context, p *driver.JobActParams) ([]*driver.JobRow, error) {
	return e.act(ctx, "retry now", p, false, func(q *filtersql.Query) string {
		now := q.Arg(micros(p.Now))
		q.Cond("status = 'pending'")
		q.Cond("run_at > " + now)
		q.Cond("wait_policy IS NULL")
		return `UPDATE ` + e.d.sqlTable() + ` SET run_at = ` + now + ` ` + q.Where() + ` RETURNING ` + columns
	})
}

// act runs, as one write, the statement build returns for the jobs p
// selects, and returns the rows it returns, sorted by ID. build adds its own
// arguments and conditions to the selection. With logged, the changed jobs
// are noted in the log of actions in the same transaction.
func (e *executor) act(ctx context.Context, op string, p *driver.JobActParams, logged bool,
	build func(q *filtersql.Query) string,
) ([]*driver.JobRow, error) {
	if p == nil {
		return nil, fmt.Errorf("sqlitedriver: %s: nil params", op)
	}
	q := filtersql.New(e.d.dialect, &p.Filter)
	if p.IDs != nil {
		if len(p.IDs) == 0 {
			return []*driver.JobRow{}, nil
		}
		q = filtersql.New(e.d.dialect, &driver.JobFilter{})
		q.Cond("id IN (SELECT value FROM json_each(" + q.Arg(matchableJSON(p.IDs)) + "))")
	}
	query := build(q)
	jobs := []*driver.JobRow{}
	fn := func(r runner) error {
		rows, err := r.query(ctx, query, q.Args...)
		if err != nil {
			return err
		}
		got, err := scanRows(rows)
		jobs = append(jobs[:0], got...)
		if err != nil || !logged {
			return err
		}
		return e.noteActs(ctx, r, p.Now, jobs)
	}
	var err error
	if logged {
		err = e.writeTx(ctx, op, e.d.actQueries(), fn)
	} else {
		err = e.write(ctx, op, fn)
	}
	if err != nil {
		return nil, err
	}
	slices.SortFunc(jobs, func(a, b *driver.JobRow) int { return cmp.Compare(a.ID, b.ID) })
	return jobs, nil
}

// JobHeld reads which of the jobs are still held by the client.
func (e *executor) JobHeld(ctx context.Context, p *driver.JobHeldParams) ([]string, error) {
	if p == nil {
		return nil, errors.New("sqlitedriver: held: nil params")
	}
	held := []string{}
	err := e.read(ctx, "held", func(r runner) error {
		rows, err := r.query(ctx, `SELECT id FROM `+e.d.sqlTable()+`
WHERE id IN (SELECT value FROM json_each(?)) AND status = 'processing' AND locked_by = ? ORDER BY id`,
			matchableJSON(p.IDs), p.ClientID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			held = append(held, id)
		}
		return rows.Close()
	})
	if err != nil {
		return nil, err
	}
	return held, nil
}

// JobClean deletes one batch of old finished jobs, found through the
// finalized index, as one write.
func (e *executor) JobClean(ctx context.Context, p *driver.JobCleanParams) (int, error) {
	if p == nil {
		return 0, errors.New("sqlitedriver: clean: nil params")
	}
	var n int64
	err := e.write(ctx, "clean", func(r runner) error {
		q := filtersql.Clean(e.d.dialect, p)
		res, err := r.exec(ctx, `DELETE FROM `+e.d.sqlTable()+` WHERE rowid IN (
	SELECT rowid FROM `+e.d.sqlTable()+" "+q.Where()+` LIMIT +`+q.Arg(p.Limit)+`)`, q.Args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}
