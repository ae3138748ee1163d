package pgxdriver

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicehq/sluice/driver/internal/operr"
)

// dbtx is what the driver runs statements on: the pool or a caller's
// transaction. Both *pgxpool.Pool and pgx.Tx have these methods.
type dbtx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
	Begin(ctx context.Context) (pgx.Tx, error)
}

// executor implements driver.Executor over the driver's pool or a caller's
// transaction (inTx).
type executor struct {
	d    *Driver
	db   dbtx
	inTx bool
}

// start checks the driver's configuration and ctx before an operation.
func (e *executor) start(ctx context.Context, op string) error {
	if e.d.err != nil {
		return e.d.err
	}
	if err := ctx.Err(); err != nil {
		return wrapErr(ctx, op, err)
	}
	return nil
}

// settleTimeout bounds a commit or rollback that runs detached from its
// operation's context.
const settleTimeout = 30 * time.Second

// detach returns the context for a statement on the pool that commits as
// soon as the server runs it (a claim or a rescue: one autocommit UPDATE ...
// RETURNING). Cancelling the caller's context after the server committed
// would lose the rows it returns: the jobs would stay claimed by nobody who
// knows it until their leases expire. So once started, the statement runs to
// the end, bounded by a timeout; the caller's context was checked before. In
// a caller's transaction, nothing commits until the caller says so, and ctx
// is used as it is.
func (e *executor) detach(ctx context.Context) (context.Context, context.CancelFunc) {
	if e.inTx {
		return ctx, func() {}
	}
	return context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
}

// The settings a batch statement runs under on the pool (see queryBatch),
// local to its transaction. Each statement is planned once per connection
// and the plan kept (a generic plan): planning a claim of ten jobs took
// longer than running it. A generic plan cannot know how many jobs a batch
// holds, nor may it trust statistics taken before any job was processing,
// so every batch statement reaches its rows through an index whatever the
// statistics say (claims through the claim index and tuple IDs,
// completions and progress through the primary key and a join that
// compares the expected status; TestPlansWithStaleStatistics checks both),
// and the auto mode could switch to a plan of its own choosing after five
// runs.
const (
	// lazy also lets the statement commit without waiting for its WAL to
	// reach disk: claims, completions and progress writes all do (see
	// queryBatch).
	lazy = "SELECT set_config('plan_cache_mode', 'force_generic_plan', true), " +
		"set_config('synchronous_commit', 'off', true)"
)

// batchStmt is one statement of a batch, with its arguments and what reads
// its rows.
type batchStmt struct {
	sql  string
	args []any
	scan func(pgx.Rows) error
}

// queryBatch runs statements that write, and passes each one's rows to its
// scan. On the pool, they are sent in one round trip after the statement
// of settings, and all run in the implicit transaction of a single Sync.
// In a caller's transaction they run as they are, one after another.
//
// Claims, completions and progress writes commit lazily: each is done once
// the server has it in memory, which takes a WAL flush (a few hundred
// microseconds on most disks) off every claim a client waits for before it
// can start jobs, and off every batch of outcomes. A crash of the server
// may forget the last of them before they reach disk, and at-least-once
// allows what follows. A job whose claim was forgotten is pending again at
// its previous attempt and runs again; the forgotten claim's outcome
// matches nothing, since a new claim of the job has a later AttemptedAt
// (see the driver package's Fencing). A job whose completion was forgotten
// is processing again under its old lease, which its client no longer
// extends (a client's heartbeat names the jobs it holds), so it expires,
// and the job is rescued and runs again. A worker's Ack, in the worker's
// own transaction, commits as that transaction does (durably, by default),
// which writes every earlier claim to disk first; so do enqueues.
func (e *executor) queryBatch(ctx context.Context, settings string, stmts ...batchStmt) error {
	if e.inTx {
		return e.queryEach(ctx, stmts...)
	}
	return e.sendBatch(ctx, append([]batchStmt{{sql: settings, scan: drain}}, stmts...)...)
}

// queryEach runs statements one after another, passing each one's rows to
// its scan.
func (e *executor) queryEach(ctx context.Context, stmts ...batchStmt) error {
	for _, st := range stmts {
		rows, err := e.db.Query(ctx, st.sql, st.args...)
		if err != nil {
			return err
		}
		if err := st.scan(rows); err != nil {
			return err
		}
	}
	return nil
}

// sendBatch sends statements in one round trip, to run in the implicit
// transaction of a single Sync, and passes each one's rows to its scan.
func (e *executor) sendBatch(ctx context.Context, stmts ...batchStmt) error {
	b := &pgx.Batch{}
	for _, st := range stmts {
		b.Queue(st.sql, st.args...).Query(st.scan)
	}
	return e.db.SendBatch(ctx, b).Close()
}

// drain reads and discards rows.
func drain(rows pgx.Rows) error {
	rows.Close()
	return rows.Err()
}

// atomic runs fn, which may run several statements, atomically: in the
// caller's transaction as it is, and on the pool in a transaction of its
// own, committed when fn succeeds.
func (e *executor) atomic(ctx context.Context, fn func(db dbtx) error) error {
	if e.inTx {
		return fn(e.db)
	}
	tx, err := e.db.Begin(ctx)
	if err != nil {
		return err
	}
	settle, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	if err := fn(tx); err != nil {
		_ = tx.Rollback(settle)
		return err
	}
	// A commit cancelled midway may have committed all the same; committing
	// detached from ctx keeps "failed" meaning "nothing was written".
	return tx.Commit(settle)
}

// wrapErr prefixes err with the driver and the operation, and makes it
// match ctx's error if ctx has ended (see [operr.Wrap]).
func wrapErr(ctx context.Context, op string, err error) error {
	return operr.Wrap(ctx, "pgxdriver", op, err)
}
