package sqlitedriver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/rowcodec"
)

// JobClaim claims jobs with one UPDATE ... RETURNING whose subquery walks the
// partial index of pending jobs in claim order; with Flow, after reading, in
// the same transaction, what the queue's state leaves room for; Keyed, with
// several statements in one transaction (see claimKeyed). Through the driver's handle
// it runs in a transaction of its own, so a cancelled context never leaves
// jobs claimed that the caller did not receive.
func (e *executor) JobClaim(ctx context.Context, p *driver.JobClaimParams) ([]*driver.JobRow, error) {
	const op = "claim"
	switch {
	case p == nil:
		return nil, errors.New("sqlitedriver: claim: nil params")
	case p.Limit < 1:
		return nil, fmt.Errorf("sqlitedriver: claim: limit %d is less than 1", p.Limit)
	case len(p.Topics) == 0:
		return nil, errors.New("sqlitedriver: claim: no topics")
	}
	topics := matchableJSON(p.Topics)
	if e.tx == nil && e.d.claimGate != nil {
		if err := e.d.claimGate(ctx); err != nil {
			return nil, wrapErr(ctx, op, err)
		}
	}
	var jobs []*driver.JobRow
	if p.Keyed {
		err := e.writeTx(ctx, op, e.d.keyQueriesUsed(), func(r runner) (err error) {
			jobs, err = e.claimKeyed(ctx, r, p, topics)
			return err
		})
		if err != nil {
			return nil, err
		}
		return sortClaimed(jobs), nil
	}
	err := e.writeTx(ctx, op, []string{e.d.fq.claimRoom, e.d.q.claim, e.d.q.count, e.d.fq.claimWindow}, func(r runner) error {
		jobs = nil
		limit, rated := p.Limit, false
		if p.Flow {
			var err error
			if limit, rated, err = e.claimRoom(ctx, r, p); err != nil || limit <= 0 {
				return err
			}
		}
		rows, err := r.query(ctx, e.d.q.claim, p.ClientID, micros(p.LockedUntil),
			micros(p.Now), p.Queue, topics, limit)
		if err != nil {
			return err
		}
		if jobs, err = scanRows(rows); err != nil {
			return err
		}
		if rated && len(jobs) > 0 {
			if _, err := r.exec(ctx, e.d.fq.claimWindow, p.Queue, micros(p.Now), len(jobs)); err != nil {
				return err
			}
		}
		var moved countMoves
		for _, j := range jobs {
			moved.add(driver.StatusPending, driver.StatusProcessing, j.Queue, j.Topic)
		}
		return moved.apply(ctx, r)
	})
	if err != nil {
		return nil, err
	}
	return sortClaimed(jobs), nil
}

// sortClaimed sorts claimed jobs in claim order: RETURNING yields rows in
// no particular order.
func sortClaimed(jobs []*driver.JobRow) []*driver.JobRow {
	slices.SortFunc(jobs, func(a, b *driver.JobRow) int {
		return cmp.Or(cmp.Compare(a.Priority, b.Priority), a.RunAt.Compare(b.RunAt), cmp.Compare(a.ID, b.ID))
	})
	return jobs
}

// JobHeartbeat extends the leases of a client's jobs with one UPDATE served
// by the partial index of processing jobs, or by the primary key when given
// the IDs.
func (e *executor) JobHeartbeat(ctx context.Context, p *driver.JobHeartbeatParams) (int, error) {
	if p == nil {
		return 0, errors.New("sqlitedriver: heartbeat: nil params")
	}
	query, args := e.d.q.heartbeat, []any{micros(p.LockedUntil), p.ClientID}
	if p.IDs != nil {
		query, args = e.d.q.heartbeatIDs, append(args, matchableJSON(p.IDs))
	}
	var n int64
	err := e.write(ctx, "heartbeat", func(r runner) error {
		res, err := r.exec(ctx, query, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

// JobRescue takes back expired leases with one UPDATE ... RETURNING, oldest
// lease first. The jobs are returned sorted by ID.
func (e *executor) JobRescue(ctx context.Context, p *driver.JobRescueParams) ([]*driver.JobRow, error) {
	const op = "rescue"
	switch {
	case p == nil:
		return nil, errors.New("sqlitedriver: rescue: nil params")
	case p.Limit < 1:
		return nil, fmt.Errorf("sqlitedriver: rescue: limit %d is less than 1", p.Limit)
	}
	ae := p.Error
	// The job's own attempt, start and client are set in SQL.
	ae.Attempt, ae.StartedAt, ae.ClientID = 0, time.Time{}, ""
	ae.At = rowcodec.Stored(ae.At)
	errJSON, err := json.Marshal(ae)
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: rescue: %w", err)
	}
	var jobs []*driver.JobRow
	err = e.writeTx(ctx, op, []string{e.d.q.rescue}, func(r runner) error {
		rows, err := r.query(ctx, e.d.q.rescue, micros(p.Now), string(errJSON), p.Limit)
		if err != nil {
			return err
		}
		jobs, err = scanRows(rows)
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(jobs, func(a, b *driver.JobRow) int { return cmp.Compare(a.ID, b.ID) })
	return jobs, nil
}

// JobGet reads one job by ID.
func (e *executor) JobGet(ctx context.Context, p *driver.JobGetParams) (*driver.JobRow, error) {
	if p == nil {
		return nil, errors.New("sqlitedriver: get: nil params")
	}
	var job *driver.JobRow
	err := e.read(ctx, "get", func(r runner) error {
		rows, err := r.query(ctx, e.d.q.get, p.ID)
		if err != nil {
			return err
		}
		jobs, err := scanRows(rows)
		if err != nil {
			return err
		}
		if len(jobs) == 0 {
			return fmt.Errorf("job %s: %w", p.ID, driver.ErrNotFound)
		}
		job = jobs[0]
		return nil
	})
	return job, err
}
