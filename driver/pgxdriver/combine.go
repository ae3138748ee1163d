package pgxdriver

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/batch"
)

// maxCombined is the most jobs one combined insert carries.
const maxCombined = 1000

// insertReq is one pool insert of plain jobs waiting to be combined.
type insertReq struct {
	jobs   []*driver.JobInsert
	queues []string
}

// insertSize is an insert's share of maxCombined.
func insertSize(r insertReq) int { return len(r.jobs) }

// insertPlain inserts jobs, none with a unique key and fewer than
// CopyThreshold, on the pool, and notifies queues, combined with other
// callers' inserts.
//
// Most of a one-job enqueue's cost is per statement and per commit: the
// round trip, planning, the notification, the WAL flush. So while one
// insert runs, the inserts that arrive queue up, and then one caller (the
// leader) runs everything queued as one statement and one commit. An
// insert that arrives when nothing runs goes at once, alone. A leader leads
// until its own insert is done, then hands the lead to the insert that has
// waited longest, so no caller works for others for long (see
// [batch.Queue]). If a group's statement is rejected for its data, each
// insert of it runs again on its own, so one bad insert (a duplicate ID,
// say) fails only its own caller.
func (e *executor) insertPlain(ctx context.Context, jobs []*driver.JobInsert, queues []string) error {
	return e.d.inserts.Do(ctx, insertReq{jobs: jobs, queues: queues})
}

// insertCombined runs a group of inserts taken from d.inserts, oldest
// first, up to maxCombined jobs.
func (d *Driver) insertCombined(group []*batch.Request[insertReq]) {
	// Once sent, a statement runs to the end whatever happens to the
	// callers' contexts, each checked just before: a context cancelled
	// while the server commits would otherwise report a failure for jobs
	// that were stored.
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	if len(group) == 1 {
		if group[0].Err = group[0].Ctx.Err(); group[0].Err == nil {
			group[0].Err = d.insertGroup(ctx, group[0].Val.jobs, group[0].Val.queues)
		}
		return
	}
	var jobs []*driver.JobInsert
	var queues []string
	for _, req := range group {
		if req.Err = req.Ctx.Err(); req.Err == nil {
			jobs = append(jobs, req.Val.jobs...)
			queues = append(queues, req.Val.queues...)
		}
	}
	slices.Sort(queues)
	queues = slices.Compact(queues)
	if len(jobs) == 0 {
		return
	}
	err := d.insertGroup(ctx, jobs, queues)
	if err == nil {
		return
	}
	// Only the server rejecting the data (a duplicate ID, say) says that
	// nothing was stored, and that one member may be to blame: run each
	// alone. Any other failure (a connection lost around the commit, a
	// timeout) may have come after the group was stored, so every member
	// gets it as it is, as a lone insert would.
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || (!strings.HasPrefix(pgErr.Code, "22") && !strings.HasPrefix(pgErr.Code, "23")) {
		for _, req := range group {
			if req.Err == nil {
				req.Err = err
			}
		}
		return
	}
	for _, req := range group {
		if req.Err == nil {
			req.Err = d.insertGroup(ctx, req.Val.jobs, req.Val.queues)
		}
	}
}

// insertGroup inserts plain jobs, then has queues notified once the insert
// has committed (see [Driver.notifyLater]).
func (d *Driver) insertGroup(ctx context.Context, jobs []*driver.JobInsert, queues []string) error {
	sql, args := insertRowsStmt(d.q, jobs)
	if _, err := d.pool.Exec(ctx, sql, args...); err != nil {
		return err
	}
	d.notifyLater(queues)
	return nil
}
