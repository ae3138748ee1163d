package sqlitedriver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/rowcodec"
)

// JobFinalize ends claims with one prepared, fenced UPDATE per item, then
// counts the jobs they moved with one query per new status, all in one
// transaction (see migration 0004).
func (e *executor) JobFinalize(ctx context.Context, p *driver.JobFinalizeParams) ([]bool, error) {
	const op = "finalize"
	if p == nil {
		return nil, errors.New("sqlitedriver: finalize: nil params")
	}
	if e.d.err != nil {
		return nil, e.d.err
	}
	args := make([][]any, len(p.Jobs))
	for i, j := range p.Jobs {
		a, err := finalizeArgs(j)
		if err != nil {
			return nil, fmt.Errorf("sqlitedriver: finalize: item %d: %w", i, err)
		}
		args[i] = a
	}
	matched := make([]bool, len(args))
	if len(args) == 0 {
		return matched, nil
	}
	err := e.writeTx(ctx, op, []string{e.d.q.finalize, e.d.q.countIDs, e.d.q.count}, func(r runner) error {
		if err := execAll(ctx, r, e.d.q.finalize, args, matched); err != nil {
			return err
		}
		ids := make([]string, 0, len(matched))
		for i, ok := range matched {
			if ok {
				ids = append(ids, p.Jobs[i].ID)
			}
		}
		if len(ids) == 0 {
			return nil
		}
		var counts countMoves
		if err := counts.addIDs(ctx, r, driver.StatusProcessing, ids); err != nil {
			return err
		}
		return counts.apply(ctx, r)
	})
	if err != nil {
		return nil, err
	}
	return matched, nil
}

// execEach runs query, which changes at most one row, once with each of
// args, and returns whether each run changed a row. Through the driver's
// handle, several runs share one transaction of their own, so they cost one
// commit.
func (e *executor) execEach(ctx context.Context, op, query string, args [][]any) ([]bool, error) {
	matched := make([]bool, len(args))
	if len(args) == 0 {
		return matched, nil
	}
	run := func(r runner) error { return execAll(ctx, r, query, args, matched) }
	var err error
	if len(args) == 1 {
		err = e.write(ctx, op, run)
	} else {
		err = e.writeTx(ctx, op, []string{query}, run)
	}
	if err != nil {
		return nil, err
	}
	return matched, nil
}

// execAll runs query, which changes at most one row, once with each of
// args through r, and records in matched whether each run changed a row.
func execAll(ctx context.Context, r runner, query string, args [][]any, matched []bool) error {
	exec, done := r.execer(ctx, query)
	defer done()
	for i, a := range args {
		res, err := exec(a...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		matched[i] = n == 1
	}
	return nil
}

// finalizeArgs returns the variables of the finalize statement for j.
func finalizeArgs(j *driver.JobFinalize) ([]any, error) {
	if j == nil {
		return nil, errors.New("nil item")
	}
	switch j.Status {
	case driver.StatusPending, driver.StatusCompleted, driver.StatusFailed, driver.StatusCancelled:
	default:
		return nil, fmt.Errorf("job %s: cannot finalize to status %q", j.ID, j.Status)
	}
	var errJSON any
	if j.Error != nil {
		ae := *j.Error
		ae.At = rowcodec.Stored(ae.At)
		ae.StartedAt = rowcodec.Stored(ae.StartedAt)
		b, err := json.Marshal(ae)
		if err != nil {
			return nil, fmt.Errorf("job %s: encode error: %w", j.ID, err)
		}
		errJSON = string(b)
	}
	dec := 0
	if j.Snooze {
		dec = 1
	}
	return []any{j.ID, j.Attempt, j.LockedBy, string(j.Status), micros(j.RunAt),
		nullMicros(j.FinalizedAt), dec, errJSON, nullJSON(j.Result), micros(j.AttemptedAt)}, nil
}

// JobProgress sets the progress of claims with one prepared, fenced UPDATE
// per item (see execEach).
func (e *executor) JobProgress(ctx context.Context, p *driver.JobProgressParams) ([]bool, error) {
	if p == nil {
		return nil, errors.New("sqlitedriver: progress: nil params")
	}
	if e.d.err != nil {
		return nil, e.d.err
	}
	args := make([][]any, len(p.Jobs))
	for i, u := range p.Jobs {
		if u == nil {
			return nil, fmt.Errorf("sqlitedriver: progress: item %d is nil", i)
		}
		b, err := rowcodec.ProgressJSON(u)
		if err != nil {
			return nil, fmt.Errorf("sqlitedriver: progress: item %d: %w", i, err)
		}
		args[i] = []any{u.ID, u.Attempt, u.LockedBy, string(b)}
	}
	return e.execEach(ctx, "progress", e.d.q.progress, args)
}
