package pgxdriver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/driver"
)

// JobClaim claims jobs with one UPDATE over a SELECT ... FOR UPDATE SKIP
// LOCKED, so claimers running at once never wait for each other's rows.
// With Flow, the claim takes its room from the queue's state, and before
// it, in the same transaction and round trip, the statement of settings
// locks the queue's state if the queue has a limit, so that claimers of a
// limited queue take turns (see claimLockSQL). Keyed, it claims in a
// transaction of several statements (see claimKeyed).
func (e *executor) JobClaim(ctx context.Context, p *driver.JobClaimParams) ([]*driver.JobRow, error) {
	const op = "claim"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("pgxdriver: claim: nil params")
	}
	topics, ok := driver.MatchableAmong(p.Topics)
	if !ok || !driver.Matchable(p.Queue) {
		return nil, nil // no such queue or topic
	}
	qctx, cancel := e.detach(ctx)
	defer cancel()
	var jobs []*driver.JobRow
	claim := batchStmt{e.d.q.claim, []any{p.ClientID, p.LockedUntil, p.Now, p.Queue, topics, p.Limit},
		func(rows pgx.Rows) (err error) {
			jobs, err = scanRows(rows)
			return err
		}}
	var err error
	switch {
	case p.Keyed:
		err = e.atomic(qctx, func(db dbtx) (err error) {
			jobs, err = e.claimKeyed(qctx, db, p, topics)
			return err
		})
	case !p.Flow:
		claim.sql = e.d.q.claimBare
		err = e.queryBatch(qctx, lazy, claim)
	case e.inTx:
		err = e.queryEach(qctx, batchStmt{e.d.q.claimLock, []any{p.Queue}, drain}, claim)
	default:
		// The lock rides on the statement of settings: no statement more
		// than a claim of a queue without a state had before.
		err = e.sendBatch(qctx, batchStmt{e.d.q.claimLockLazy, []any{p.Queue}, drain}, claim)
	}
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

// JobHeartbeat extends the leases of a client's jobs with one UPDATE: over
// the lease index, or through the primary key when given the IDs.
func (e *executor) JobHeartbeat(ctx context.Context, p *driver.JobHeartbeatParams) (int, error) {
	const op = "heartbeat"
	if err := e.start(ctx, op); err != nil {
		return 0, err
	}
	if p == nil {
		return 0, errors.New("pgxdriver: heartbeat: nil params")
	}
	if !driver.Matchable(p.ClientID) {
		return 0, nil // no such client
	}
	sql, args := e.d.q.heartbeat, []any{p.ClientID, p.LockedUntil}
	if p.IDs != nil {
		sql, args = e.d.q.heartbeatIDs, append(args, uuids(p.IDs))
	}
	tag, err := e.db.Exec(ctx, sql, args...)
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
