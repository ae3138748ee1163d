package pgxdriver

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicehq/sluice/driver"
)

// maxCombined is the most jobs one combined insert carries.
const maxCombined = 1000

// insertReq is one pool insert of plain jobs waiting to be combined.
type insertReq struct {
	ctx    context.Context
	jobs   []*driver.JobInsert
	queues []string

	err  error
	done chan struct{}
	// lead is closed when the request is made the leader; taken is set,
	// under combiner.mu, when a leader takes the request, and leader when it
	// is made the leader.
	lead   chan struct{}
	taken  bool
	leader bool
}

// combiner groups small inserts that arrive on the pool at the same time.
//
// Most of a one-job enqueue's cost is per statement and per commit: the
// round trip, planning, the notification, the WAL flush. So while one
// insert runs, the inserts that arrive queue up, and then one caller (the
// leader) runs everything queued as one statement and one commit. An
// insert that arrives when nothing runs goes at once, alone. A leader leads
// until its own insert is done, then hands the lead to the oldest insert
// still queued, so no caller works for others for long. If a group's
// statement is rejected for its data, each insert of it runs again on its
// own, so one bad insert (a duplicate ID, say) fails only its own caller.
type combiner struct {
	mu      sync.Mutex
	pending []*insertReq
	leading bool
}

// insertPlain inserts jobs, none with a unique key and fewer than
// CopyThreshold, on the pool, and notifies queues, combined with other
// callers' inserts.
func (e *executor) insertPlain(ctx context.Context, jobs []*driver.JobInsert, queues []string) error {
	c := &e.d.combiner
	req := &insertReq{ctx: ctx, jobs: jobs, queues: queues, done: make(chan struct{}), lead: make(chan struct{})}
	c.mu.Lock()
	c.pending = append(c.pending, req)
	if !c.leading {
		c.leading = true
		req.leader = true
		close(req.lead)
	}
	c.mu.Unlock()
	select {
	case <-req.done:
		return req.err
	case <-req.lead:
	case <-ctx.Done():
		c.mu.Lock()
		if !req.taken && !req.leader {
			c.pending = slices.DeleteFunc(c.pending, func(r *insertReq) bool { return r == req })
			c.mu.Unlock()
			return ctx.Err()
		}
		leader := req.leader
		c.mu.Unlock()
		if !leader {
			<-req.done // a leader is running it
			return req.err
		}
	}
	// req leads: run groups until its own is done, then hand over.
	for !req.taken {
		e.runGroup()
	}
	c.mu.Lock()
	if len(c.pending) > 0 {
		next := c.pending[0]
		next.leader = true
		close(next.lead)
	} else {
		c.leading = false
	}
	c.mu.Unlock()
	return req.err
}

// runGroup runs the oldest inserts waiting, up to maxCombined jobs, as one
// group. The caller leads, and its own insert is among those waiting.
func (e *executor) runGroup() {
	c := &e.d.combiner
	c.mu.Lock()
	var group []*insertReq
	n := 0
	for len(c.pending) > 0 && (len(group) == 0 || n+len(c.pending[0].jobs) <= maxCombined) {
		req := c.pending[0]
		c.pending = c.pending[1:]
		req.taken = true
		group = append(group, req)
		n += len(req.jobs)
	}
	c.mu.Unlock()
	defer func() {
		for _, req := range group {
			close(req.done)
		}
	}()
	// Once sent, a statement runs to the end whatever happens to the
	// callers' contexts, each checked just before: a context cancelled
	// while the server commits would otherwise report a failure for jobs
	// that were stored.
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	if len(group) == 1 {
		if group[0].err = group[0].ctx.Err(); group[0].err == nil {
			group[0].err = e.insertGroup(ctx, group[0].jobs, group[0].queues)
		}
		return
	}
	var jobs []*driver.JobInsert
	var queues []string
	for _, req := range group {
		if req.err = req.ctx.Err(); req.err == nil {
			jobs = append(jobs, req.jobs...)
			queues = append(queues, req.queues...)
		}
	}
	slices.Sort(queues)
	queues = slices.Compact(queues)
	if len(jobs) == 0 {
		return
	}
	err := e.insertGroup(ctx, jobs, queues)
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
			if req.err == nil {
				req.err = err
			}
		}
		return
	}
	for _, req := range group {
		if req.err == nil {
			req.err = e.insertGroup(ctx, req.jobs, req.queues)
		}
	}
}

// insertGroup inserts plain jobs, then has queues notified once the insert
// has committed (see [Driver.notifyLater]).
func (e *executor) insertGroup(ctx context.Context, jobs []*driver.JobInsert, queues []string) error {
	sql, args := insertRowsStmt(e.d.q, jobs)
	if _, err := e.db.Exec(ctx, sql, args...); err != nil {
		return err
	}
	e.d.notifyLater(queues)
	return nil
}
