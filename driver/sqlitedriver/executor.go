package sqlitedriver

import (
	"context"
	"database/sql"
	"sync/atomic"

	"github.com/sluicehq/sluice/driver/internal/operr"
)

// executor implements driver.Executor over the driver's handle (tx nil) or
// a caller's transaction.
type executor struct {
	d  *Driver
	tx *sql.Tx
	// txOnHandle records whether tx was found to belong to the driver's
	// handle: 0 not known yet, 1 yes, -1 no (see onHandle).
	txOnHandle atomic.Int32
}

// runner runs statements on one place: the driver's handle when tx is nil,
// else tx. A runner over a transaction never touches another connection.
type runner struct {
	d  *Driver
	tx *sql.Tx
	// ownTx is true when tx was begun by the driver on its own handle.
	ownTx bool
	// e is the executor of a caller's transaction, nil otherwise.
	e *executor
	// read is true for a read outside a caller's transaction, which runs on
	// the read handle if the driver has one (see [WithReadDB]).
	read bool
	// detach, in a group commit, runs statements without their context's
	// cancellation: an interrupted write would roll back the whole group's
	// transaction, not only its own part.
	detach bool
}

// stmtCtx returns the context for a statement run by r.
func (r runner) stmtCtx(ctx context.Context) context.Context {
	if r.detach {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// stmt returns a prepared statement for query usable by r, or nil when the
// query must be sent as text. On the handle it prepares and caches the
// statement. In a transaction on the handle (the driver's own, or a
// caller's found to be) it reuses a cached statement, and never prepares
// one on the handle, which would need a second connection.
func (r runner) stmt(ctx context.Context, query string) *sql.Stmt {
	switch {
	case r.tx == nil:
		cache := &r.d.stmts
		if r.onReadDB() {
			cache = &r.d.readStmts
		}
		st, err := cache.get(ctx, query)
		if err != nil {
			return nil // the query sent as text reports the error
		}
		return st
	case r.ownTx || r.e != nil && r.e.onHandle(ctx):
		if st := r.d.stmts.lookup(query); st != nil {
			return r.tx.StmtContext(ctx, st)
		}
	}
	return nil
}

// onHandle reports whether the caller's transaction belongs to the driver's
// handle, so that statements prepared there can run in it. A caller's
// transaction may come from another handle on the same file (an application
// with separate read and write pools), where they would fail. database/sql
// does not tell which handle a transaction belongs to, so the first call
// runs a trivial prepared query in it and remembers whether that worked.
func (e *executor) onHandle(ctx context.Context) bool {
	switch e.txOnHandle.Load() {
	case 1:
		return true
	case -1:
		return false
	}
	probe := e.d.stmts.lookup(probeQuery)
	if probe == nil {
		return false // nothing prepared yet; try again next time
	}
	var one int
	if err := e.tx.StmtContext(ctx, probe).QueryRowContext(ctx).Scan(&one); err != nil {
		e.txOnHandle.Store(-1)
		return false
	}
	e.txOnHandle.Store(1)
	return true
}

// probeQuery is the trivial query onHandle runs.
const probeQuery = "SELECT 1"

func (r runner) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	ctx = r.stmtCtx(ctx)
	if st := r.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	if r.tx != nil {
		return r.tx.ExecContext(ctx, query, args...)
	}
	return r.handle().ExecContext(ctx, query, args...)
}

// onReadDB reports whether r runs on the driver's read handle.
func (r runner) onReadDB() bool { return r.read && r.tx == nil && r.d.readDB != nil }

// handle returns the handle r runs on when it is not in a transaction.
func (r runner) handle() *sql.DB {
	if r.onReadDB() {
		return r.d.readDB
	}
	return r.d.db
}

// execer returns a function that runs query with args on r, prepared once
// for all its calls, and a function to call when done with it.
func (r runner) execer(ctx context.Context, query string) (exec func(args ...any) (sql.Result, error), done func()) {
	ctx = r.stmtCtx(ctx)
	st, done := r.prepareOnce(ctx, query)
	if st == nil {
		return func(args ...any) (sql.Result, error) { return r.exec(ctx, query, args...) }, done
	}
	return func(args ...any) (sql.Result, error) { return st.ExecContext(ctx, args...) }, done
}

// prepareOnce returns query prepared for several calls: the driver's own
// statement, or one prepared in r's transaction and closed by done. It
// returns a nil statement when neither can be had.
func (r runner) prepareOnce(ctx context.Context, query string) (st *sql.Stmt, done func()) {
	if st := r.stmt(ctx, query); st != nil {
		return st, func() {}
	}
	if r.tx != nil {
		if p, err := r.tx.PrepareContext(ctx, query); err == nil {
			return p, func() { _ = p.Close() }
		}
	}
	return nil, func() {}
}

func (r runner) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	ctx = r.stmtCtx(ctx)
	if st := r.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	if r.tx != nil {
		return r.tx.QueryContext(ctx, query, args...)
	}
	return r.handle().QueryContext(ctx, query, args...)
}

// read runs fn on the executor's place without taking the write token.
func (e *executor) read(ctx context.Context, op string, fn func(r runner) error) error {
	if e.d.err != nil {
		return e.d.err
	}
	if err := ctx.Err(); err != nil {
		return wrapErr(ctx, op, err)
	}
	return wrapErr(ctx, op, fn(runner{d: e.d, tx: e.tx, e: e, read: true}))
}

// write runs fn, which writes with a single statement. On the driver's
// handle it runs under the write token (see [Driver.submit]); a single
// statement is atomic by itself.
func (e *executor) write(ctx context.Context, op string, fn func(r runner) error) error {
	return e.writeTx(ctx, op, nil, fn)
}

// writeTx runs fn, which may run several statements, atomically. In a
// caller's transaction it runs fn there. On the driver's handle it runs fn
// under the write token, in a transaction of its own or in a group commit
// (see [Driver.submit]); queries are prepared first so that fn finds them
// cached. A nil queries marks fn as a single statement, which needs no
// transaction when it runs alone.
func (e *executor) writeTx(ctx context.Context, op string, queries []string, fn func(r runner) error) error {
	if e.d.err != nil {
		return e.d.err
	}
	if err := ctx.Err(); err != nil {
		return wrapErr(ctx, op, err)
	}
	if e.tx != nil {
		return wrapErr(ctx, op, fn(runner{d: e.d, tx: e.tx, e: e}))
	}
	for _, q := range queries {
		if _, err := e.d.stmts.get(ctx, q); err != nil {
			return wrapErr(ctx, op, err)
		}
	}
	return wrapErr(ctx, op, e.d.submit(ctx, queries != nil, fn))
}

// inTx runs fn in a new transaction on the handle and commits it if fn
// succeeds.
func (d *Driver) inTx(ctx context.Context, fn func(r runner) error) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(runner{d: d, tx: tx, ownTx: true}); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// wrapErr prefixes err with the driver and the operation, and makes it
// match ctx's error if ctx has ended (see [operr.Wrap]).
func wrapErr(ctx context.Context, op string, err error) error {
	return operr.Wrap(ctx, "sqlitedriver", op, err)
}
