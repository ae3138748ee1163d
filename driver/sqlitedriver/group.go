package sqlitedriver

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/driver/internal/batch"
)

// maxGroup is the most writes one group commit carries.
const maxGroup = 64

// writeReq is one write waiting for the driver's write token.
type writeReq struct {
	// multi is true when fn may run several statements, and so needs a
	// transaction even when it runs alone.
	multi bool
	fn    func(r runner) error
}

// submit runs fn under the driver's write token and returns its error.
//
// Writes on the driver's handle go one at a time, since SQLite has a single
// writer, and most of a small write's cost is its commit. So writes that
// wait for the token are grouped: whoever takes the token (the leader) runs
// the waiting writes, oldest first, in one transaction, each inside a
// savepoint of its own, and commits once (see [batch.Queue]). Each write
// stays atomic: one that fails is rolled back to its savepoint and the
// others commit; if the commit fails, every write of the group fails and
// none is visible. A write that runs alone runs as it would without
// grouping.
func (d *Driver) submit(ctx context.Context, multi bool, fn func(r runner) error) error {
	return d.writes.Do(ctx, writeReq{multi: multi, fn: fn})
}

// runWrites runs a group of writes taken from d.writes, in a group commit
// when there are several. The caller holds the write token.
func (d *Driver) runWrites(group []*batch.Request[writeReq]) {
	if len(group) > 1 {
		d.groupCommit(group)
		return
	}
	req := group[0]
	if req.Val.multi {
		req.Err = d.inTx(req.Ctx, req.Val.fn)
	} else {
		req.Err = req.Val.fn(runner{d: d})
	}
}

// groupCommit runs group in one transaction, a savepoint each.
func (d *Driver) groupCommit(group []*batch.Request[writeReq]) {
	fail := func(err error) {
		for _, req := range group {
			if req.Err == nil {
				req.Err = err
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
	for _, req := range group {
		if err := req.Ctx.Err(); err != nil {
			req.Err = err
			continue
		}
		if _, err := tx.ExecContext(ctx, "SAVEPOINT sluice_write"); err != nil {
			req.Err = err
			continue
		}
		req.Err = req.Val.fn(r)
		if req.Err != nil {
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
