package pgxdriver

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sluicehq/sluice/driver"
)

// JobFinalize ends every claim of the batch with one UPDATE over arrays:
// the plain completions with a lean one, the others with one that can
// write anything, both in one round trip and one transaction.
func (e *executor) JobFinalize(ctx context.Context, p *driver.JobFinalizeParams) ([]bool, error) {
	const op = "finalize"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("pgxdriver: finalize: nil params")
	}
	matched := make([]bool, len(p.Jobs))
	full, plain := newFinalizeArrays(0), newFinalizeArrays(len(p.Jobs))
	for i, it := range p.Jobs {
		if it == nil {
			return nil, fmt.Errorf("pgxdriver: finalize: item %d is nil", i)
		}
		id, ok := parseUUID(it.ID)
		if !ok {
			continue // names no job
		}
		if it.Status == driver.StatusCompleted && it.Error == nil && it.Result == nil &&
			(len(plain.index) == 0 || it.LockedBy == plain.lockedBy[0]) {
			plain.add(i, id, it)
			continue
		}
		if err := full.addFull(i, id, it); err != nil {
			return nil, fmt.Errorf("pgxdriver: finalize: item %d: %w", i, err)
		}
	}
	var stmts []batchStmt
	if len(plain.index) > 0 {
		stmts = append(stmts, batchStmt{e.d.q.complete, plain.completeArgs(), scanMatched(matched, plain.index)})
	}
	if len(full.index) > 0 {
		stmts = append(stmts, batchStmt{e.d.q.finalize, full.finalizeArgs(), scanMatched(matched, full.index)})
	}
	if len(stmts) == 0 {
		return matched, nil
	}
	if err := e.queryBatch(ctx, lazy, stmts...); err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	return matched, nil
}

// finalizeArrays are the parallel arrays of completeSQL or finalizeSQL,
// one element per item, and each element's index among the items.
type finalizeArrays struct {
	index                            []int
	ids                              []pgtype.UUID
	attempts, giveBack               []int32
	lockedBy, statuses, fromStatus   []string
	runAts, finalizedAts, attempteds []pgtype.Timestamptz
	errs, results                    []pgtype.Text
}

// newFinalizeArrays returns arrays with room for n items.
func newFinalizeArrays(n int) *finalizeArrays {
	return &finalizeArrays{
		index: make([]int, 0, n), ids: make([]pgtype.UUID, 0, n), attempts: make([]int32, 0, n),
		lockedBy: make([]string, 0, n), attempteds: make([]pgtype.Timestamptz, 0, n),
		finalizedAts: make([]pgtype.Timestamptz, 0, n),
	}
}

// add appends the columns both statements take (for completeSQL, only the
// first holder counts).
func (a *finalizeArrays) add(i int, id pgtype.UUID, it *driver.JobFinalize) {
	a.index = append(a.index, i)
	a.ids = append(a.ids, id)
	a.attempts = append(a.attempts, int32(it.Attempt))
	a.lockedBy = append(a.lockedBy, it.LockedBy)
	a.attempteds = append(a.attempteds, pgtype.Timestamptz{Time: it.AttemptedAt, Valid: true})
	a.finalizedAts = append(a.finalizedAts, nullTime(it.FinalizedAt))
}

// addFull appends an item of finalizeSQL.
func (a *finalizeArrays) addFull(i int, id pgtype.UUID, it *driver.JobFinalize) error {
	var e []byte
	if it.Error != nil {
		var err error
		if e, err = errorJSON(it.Error); err != nil {
			return err
		}
	}
	back := int32(0)
	if it.Snooze && it.Status == driver.StatusPending {
		back = 1
	}
	a.add(i, id, it)
	a.fromStatus = append(a.fromStatus, string(driver.StatusProcessing))
	a.statuses = append(a.statuses, string(it.Status))
	a.runAts = append(a.runAts, pgtype.Timestamptz{Time: it.RunAt, Valid: true})
	a.giveBack = append(a.giveBack, back)
	a.errs = append(a.errs, nullText(e))
	a.results = append(a.results, nullText(it.Result))
	return nil
}

func (a *finalizeArrays) completeArgs() []any {
	return []any{a.ids, a.attempts, a.lockedBy[0], a.attempteds, a.finalizedAts}
}

func (a *finalizeArrays) finalizeArgs() []any {
	return []any{a.ids, a.attempts, a.lockedBy, a.statuses, a.runAts, a.finalizedAts, a.giveBack, a.errs, a.results,
		a.fromStatus, a.attempteds}
}
