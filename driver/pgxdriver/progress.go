package pgxdriver

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/rowcodec"
)

// JobProgress sets the progress of every claim of the batch with one UPDATE
// over arrays. Items whose ID is not a UUID, or whose LockedBy breaks the
// text rule, match nothing.
func (e *executor) JobProgress(ctx context.Context, p *driver.JobProgressParams) ([]bool, error) {
	const op = "progress"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("pgxdriver: progress: nil params")
	}
	matched := make([]bool, len(p.Jobs))
	var (
		ids            []pgtype.UUID
		attempts       []int32
		lockedBy       []string
		progress, logs []pgtype.Text
		logged         []pgtype.Int4
		fromStatus     []string
		index          []int
	)
	for i, u := range p.Jobs {
		if u == nil {
			return nil, fmt.Errorf("pgxdriver: progress: item %d is nil", i)
		}
		id, ok := parseUUID(u.ID)
		if !ok || !driver.Matchable(u.LockedBy) {
			continue // names no claim
		}
		var b, l []byte
		var n pgtype.Int4
		var err error
		if !u.KeepProgress {
			if b, err = rowcodec.ProgressJSON(u); err != nil {
				return nil, fmt.Errorf("pgxdriver: progress: item %d: %w", i, err)
			}
		}
		if u.Logs != nil {
			if l, err = rowcodec.LogsJSON(u.Logs); err != nil {
				return nil, fmt.Errorf("pgxdriver: progress: item %d: %w", i, err)
			}
			n = pgtype.Int4{Int32: int32(u.Logs.Logged()), Valid: true}
		}
		ids = append(ids, id)
		attempts = append(attempts, int32(u.Attempt))
		lockedBy = append(lockedBy, u.LockedBy)
		progress = append(progress, nullText(b))
		logs = append(logs, nullText(l))
		logged = append(logged, n)
		fromStatus = append(fromStatus, string(driver.StatusProcessing))
		index = append(index, i)
	}
	if len(ids) == 0 {
		return matched, nil
	}
	err := e.queryBatch(ctx, lazy, batchStmt{e.d.q.progress, []any{ids, attempts, lockedBy, progress, fromStatus, logs, logged},
		scanMatched(matched, index)})
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	return matched, nil
}

// scanMatched returns a scan of the item numbers (from 1) a batch statement
// returns, that sets matched[index[n-1]] for each.
func scanMatched(matched []bool, index []int) func(pgx.Rows) error {
	return func(rows pgx.Rows) error {
		var ord int64
		_, err := pgx.ForEachRow(rows, []any{&ord}, func() error {
			matched[index[ord-1]] = true
			return nil
		})
		return err
	}
}
