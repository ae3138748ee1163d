package pgxdriver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sluicehq/sluice/driver"
)

// JobClaim claims jobs with one UPDATE over a SELECT ... FOR UPDATE SKIP
// LOCKED, so claimers running at once never wait for each other's rows.
func (e *executor) JobClaim(ctx context.Context, p *driver.JobClaimParams) ([]*driver.JobRow, error) {
	const op = "claim"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("pgxdriver: claim: nil params")
	}
	qctx, cancel := e.detach(ctx)
	defer cancel()
	var jobs []*driver.JobRow
	err := e.queryBatch(qctx, e.d.q.claim, []any{p.ClientID, p.LockedUntil, p.Now, p.Queue, p.Topics, p.Limit}, lazy,
		func(rows pgx.Rows) (err error) {
			jobs, err = scanRows(rows)
			return err
		})
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	slices.SortFunc(jobs, func(a, b *driver.JobRow) int {
		if c := cmp.Compare(a.Priority, b.Priority); c != 0 {
			return c
		}
		if c := a.RunAt.Compare(b.RunAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return jobs, nil
}

// JobFinalize ends every claim of the batch with one UPDATE over arrays.
func (e *executor) JobFinalize(ctx context.Context, p *driver.JobFinalizeParams) ([]bool, error) {
	const op = "finalize"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("pgxdriver: finalize: nil params")
	}
	matched := make([]bool, len(p.Jobs))
	args, index, err := finalizeArgs(p.Jobs)
	if err != nil {
		return nil, fmt.Errorf("pgxdriver: finalize: %w", err)
	}
	if args == nil {
		return matched, nil
	}
	err = e.queryBatch(ctx, e.d.q.finalize, args, durable, scanMatched(matched, index))
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	return matched, nil
}

// finalizeArgs returns the finalize statement's arrays and the index in
// items of each array element. Items whose ID is not a UUID match nothing
// and are left out; args is nil when none is left.
func finalizeArgs(items []*driver.JobFinalize) (args []any, index []int, err error) {
	n := len(items)
	var (
		ids                  = make([]pgtype.UUID, 0, n)
		attempts, giveBack   = make([]int32, 0, n), make([]int32, 0, n)
		lockedBy, statuses   = make([]string, 0, n), make([]string, 0, n)
		runAts, finalizedAts = make([]pgtype.Timestamptz, 0, n), make([]pgtype.Timestamptz, 0, n)
		attemptedAts         = make([]pgtype.Timestamptz, 0, n)
		errs, results        = make([]pgtype.Text, 0, n), make([]pgtype.Text, 0, n)
		fromStatus           = make([]string, 0, n)
	)
	index = make([]int, 0, n)
	for i, it := range items {
		if it == nil {
			return nil, nil, fmt.Errorf("item %d is nil", i)
		}
		id, ok := parseUUID(it.ID)
		if !ok {
			continue
		}
		var e []byte
		if it.Error != nil {
			if e, err = errorJSON(it.Error); err != nil {
				return nil, nil, fmt.Errorf("item %d: %w", i, err)
			}
		}
		back := int32(0)
		if it.Snooze && it.Status == driver.StatusPending {
			back = 1
		}
		ids = append(ids, id)
		attempts = append(attempts, int32(it.Attempt))
		lockedBy = append(lockedBy, it.LockedBy)
		statuses = append(statuses, string(it.Status))
		runAts = append(runAts, pgtype.Timestamptz{Time: it.RunAt, Valid: true})
		finalizedAts = append(finalizedAts, nullTime(it.FinalizedAt))
		giveBack = append(giveBack, back)
		errs = append(errs, nullText(e))
		results = append(results, nullText(it.Result))
		fromStatus = append(fromStatus, string(driver.StatusProcessing))
		attemptedAts = append(attemptedAts, pgtype.Timestamptz{Time: it.AttemptedAt, Valid: true})
		index = append(index, i)
	}
	if len(ids) == 0 {
		return nil, nil, nil
	}
	return []any{ids, attempts, lockedBy, statuses, runAts, finalizedAts, giveBack, errs, results, fromStatus,
		attemptedAts}, index, nil
}

// JobHeartbeat extends the leases of a client's jobs with one UPDATE.
func (e *executor) JobHeartbeat(ctx context.Context, p *driver.JobHeartbeatParams) (int, error) {
	const op = "heartbeat"
	if err := e.start(ctx, op); err != nil {
		return 0, err
	}
	if p == nil {
		return 0, errors.New("pgxdriver: heartbeat: nil params")
	}
	tag, err := e.db.Exec(ctx, e.d.q.heartbeat, p.ClientID, p.LockedUntil)
	if err != nil {
		return 0, wrapErr(ctx, op, err)
	}
	return int(tag.RowsAffected()), nil
}

// JobRescue takes back expired claims with one UPDATE over a SELECT ...
// FOR UPDATE SKIP LOCKED, so rescuers running at once take different jobs.
func (e *executor) JobRescue(ctx context.Context, p *driver.JobRescueParams) ([]*driver.JobRow, error) {
	const op = "rescue"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("pgxdriver: rescue: nil params")
	}
	ae := p.Error
	ae.StartedAt, ae.ClientID = time.Time{}, "" // the job's own are recorded
	e1, err := errorJSON(&ae)
	if err != nil {
		return nil, fmt.Errorf("pgxdriver: rescue: %w", err)
	}
	qctx, cancel := e.detach(ctx)
	defer cancel()
	rows, err := e.db.Query(qctx, e.d.q.rescue, p.Now, string(e1), p.Limit)
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	jobs, err := scanRows(rows)
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	return jobs, nil
}

// JobGet reads one job. An ID that is not a UUID names no job.
func (e *executor) JobGet(ctx context.Context, p *driver.JobGetParams) (*driver.JobRow, error) {
	const op = "get"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("pgxdriver: get: nil params")
	}
	id, ok := parseUUID(p.ID)
	if !ok {
		return nil, fmt.Errorf("pgxdriver: get %s: %w", p.ID, driver.ErrNotFound)
	}
	j, err := scanRow(e.db.QueryRow(ctx, e.d.q.get, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("pgxdriver: get %s: %w", p.ID, driver.ErrNotFound)
	}
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	return j, nil
}
