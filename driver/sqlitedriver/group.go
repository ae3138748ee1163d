package sqlitedriver

import (
	"context"
	"fmt"
)

// maxGroup is the most writes one group commit carries.
const maxGroup = 64

// writeReq is one write waiting for the driver's write token.
type writeReq struct {
	ctx context.Context
	// multi is true when fn may run several statements, and so needs a
	// transaction even when it runs alone.
	multi bool
	fn    func(r runner) error

	err  error
	done chan struct{}
	// taken is set, under Driver.mu, when a leader takes the request.
	taken bool
}

// submit runs req under the driver's write token and returns its error.
//
// Writes on the driver's handle go one at a time, since SQLite has a single
// writer, and most of a small write's cost is its commit. So writes that
// wait for the token are grouped: whoever takes the token (the leader) runs
// every waiting write in one transaction, each inside a savepoint of its
// own, and commits once. Each write stays atomic: one that fails is rolled
// back to its savepoint and the others commit; if the commit fails, every
// write of the group fails and none is visible. A write that runs alone
// runs as it would without grouping.
func (d *Driver) submit(ctx context.Context, req *writeReq) error {
	req.done = make(chan struct{})
	d.mu.Lock()
	d.pending = append(d.pending, req)
	d.mu.Unlock()
	for {
		select {
		case d.writeSem <- struct{}{}:
			d.lead()
			d.unlockWrite()
			// The token is ours until lead returns and no leader runs
			// while we hold it, so req is done: by us, or by an earlier
			// leader that took it.
			<-req.done
			return req.err
		case <-req.done:
			return req.err
		case <-ctx.Done():
			d.mu.Lock()
			if !req.taken {
				d.pending = removeReq(d.pending, req)
				d.mu.Unlock()
				return ctx.Err()
			}
			d.mu.Unlock()
			<-req.done // a leader is running it
			return req.err
		}
	}
}

// lead runs the waiting writes, in a group commit when there are several.
// The caller holds the write token.
func (d *Driver) lead() {
	d.mu.Lock()
	n := min(len(d.pending), maxGroup)
	batch := make([]*writeReq, n)
	copy(batch, d.pending[:n])
	d.pending = append(d.pending[:0], d.pending[n:]...)
	for _, req := range batch {
		req.taken = true
	}
	d.mu.Unlock()
	switch len(batch) {
	case 0:
	case 1:
		req := batch[0]
		if req.multi {
			req.err = d.inTx(req.ctx, req.fn)
		} else {
			req.err = req.fn(runner{d: d})
		}
		close(req.done)
	default:
		d.groupCommit(batch)
	}
}

// groupCommit runs batch in one transaction, a savepoint each.
func (d *Driver) groupCommit(batch []*writeReq) {
	defer func() {
		for _, req := range batch {
			close(req.done)
		}
	}()
	fail := func(err error) {
		for _, req := range batch {
			if req.err == nil {
				req.err = err
			}
		}
	}
	// The group's transaction outlives any one member's context.
	ctx := context.Background()
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		fail(fmt.Errorf("group commit: begin: %w", err))
		return
	}
	r := runner{d: d, tx: tx, ownTx: true, detach: true}
	for _, req := range batch {
		if err := req.ctx.Err(); err != nil {
			req.err = err
			continue
		}
		if _, err := tx.ExecContext(ctx, "SAVEPOINT sluice_write"); err != nil {
			req.err = err
			continue
		}
		req.err = req.fn(r)
		if req.err != nil {
			_, err = tx.ExecContext(ctx, "ROLLBACK TO sluice_write")
		}
		if err == nil {
			_, err = tx.ExecContext(ctx, "RELEASE sluice_write")
		}
		if err != nil {
			// The transaction is no longer usable: fail everyone.
			_ = tx.Rollback()
			fail(fmt.Errorf("group commit: savepoint: %w", err))
			return
		}
	}
	if err := tx.Commit(); err != nil {
		fail(fmt.Errorf("group commit: commit: %w", err))
	}
}

func removeReq(reqs []*writeReq, req *writeReq) []*writeReq {
	for i, r := range reqs {
		if r == req {
			return append(reqs[:i], reqs[i+1:]...)
		}
	}
	return reqs
}
