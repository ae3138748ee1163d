package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/batch"
	"github.com/sluicehq/sluice/driver/internal/filtersql"
	"github.com/sluicehq/sluice/driver/internal/sqlident"
)

// DefaultTable is the name of the jobs table unless [WithTable] says
// otherwise.
const DefaultTable = "sluice_jobs"

// Driver is a sluice driver over a SQLite database opened with
// modernc.org/sqlite. It implements driver.Driver[*sql.Tx] and
// driver.Notifier. It is safe for concurrent use.
type Driver struct {
	db    *sql.DB
	table string
	// err is a configuration error found by New; every operation returns
	// it.
	err error
	q   *queries
	fq  *flowQueries
	kq  *keyQueries
	gq  *groupQueries
	// dialect writes the driver's filters.
	dialect *filtersql.Dialect
	// writes serializes the writes this driver makes on its own handle:
	// its token, the write token, is held by every write that does not
	// run in a caller's transaction, and writes that wait for it are
	// grouped (see [Driver.submit]).
	writes *batch.Queue[writeReq]
	stmts  stmtCache
	// readDB, when set by [WithReadDB], runs the reads made outside a
	// caller's transaction; readStmts keeps their statements prepared there.
	readDB    *sql.DB
	readStmts stmtCache
	hub       hub
	// claimGate, when set by [WithClaimGate], is waited for before each
	// claim on the driver's handle.
	claimGate func(ctx context.Context) error
}

// Option configures a [Driver].
type Option func(*Driver)

// WithTable sets the name of the jobs table; the default is [DefaultTable].
// The migrations table is named after it, with the suffix "_migrations",
// and so are the tables of client records (suffix "_clients") and of
// schedules ("_schedules").
// name must be a plain SQL identifier (letters, digits and underscores, not
// starting with a digit); otherwise Migrate and every operation return an
// error. SQL keywords such as "order" are valid names; names SQLite keeps
// for itself (starting with "sqlite_") fail to migrate.
func WithTable(name string) Option {
	return func(d *Driver) {
		if !sqlident.IsPlain(name) {
			d.err = fmt.Errorf("sqlitedriver: WithTable: invalid table name %q: want a plain SQL identifier matching %s", name, sqlident.PlainPattern)
			return
		}
		d.table = name
	}
}

// WithReadDB makes the driver run its reads that are not in a caller's
// transaction (Get, List, Stats, the change feed, the client and schedule
// lists) on readDB, another handle on the same database file, and only its
// writes on the handle passed to [New]. It is for applications that keep
// two pools on one file, as PocketBase does: a pool of connections for
// reads and a single connection for writes, so that a long read never holds
// the only writer and reads never queue behind writes. A nil readDB leaves
// every operation on the handle passed to New.
func WithReadDB(readDB *sql.DB) Option {
	return func(d *Driver) { d.readDB = readDB }
}

// WithClaimGate makes every claim on the driver's handle (not those in a
// caller's transaction) call gate first and wait for it to return; a
// claim whose gate returns an error fails with it and claims nothing. It
// is for applications whose own writes share SQLite's single writer with
// the queue, as in PocketBase: a gate that waits while the application
// has writes in flight lets them have the write connection, and the
// processors, before the queue takes more jobs. A gate should wait only a
// short, bounded time, or the queue stops taking jobs; and the claim's
// times (its Now and LockedUntil) were fixed before it, so its wait comes
// out of the claimed jobs' leases. Only claims wait:
// completions, heartbeats and inserts of jobs do not, so a claim's gate
// may wait for a request that enqueues a job without deadlock.
func WithClaimGate(gate func(ctx context.Context) error) Option {
	return func(d *Driver) { d.claimGate = gate }
}

// New returns a driver over db, a handle opened with modernc.org/sqlite,
// best by [Open] or with the data source name [DSN] returns. It starts
// nothing and does not touch the database: sluice.NewClient creates and
// migrates the schema (unless its Config.SkipMigrations is set);
// [Driver.Migrate] is for migrating without a client.
//
// The driver never holds one connection while it waits for another, so a
// handle limited to a single connection (db.SetMaxOpenConns(1)) works.
func New(db *sql.DB, opts ...Option) *Driver {
	d := &Driver{db: db, table: DefaultTable}
	d.writes = batch.New(maxGroup, nil, d.runWrites)
	// Requests that arrive spread out, such as HTTP enqueues, then share
	// commits: see YieldFirst.
	d.writes.YieldFirst()
	for _, opt := range opts {
		opt(d)
	}
	if db == nil && d.err == nil {
		d.err = errors.New("sqlitedriver: New: nil *sql.DB")
	}
	d.q = newQueries(d.table)
	d.fq = newFlowQueries(d.table)
	d.kq = newKeyQueries(d.table)
	d.gq = newGroupQueries(d.table)
	d.dialect = newDialect(d.table)
	d.stmts.db = db
	d.readStmts.db = d.readDB
	return d
}

// Table returns the name of the jobs table, unquoted.
func (d *Driver) Table() string { return d.table }

// Executor returns an executor that runs each operation on the driver's own
// handle. Its writes are serialized within the process, so the client's
// concurrent claims, completions and inserts never wait inside SQLite's busy
// handler; operations that write more than one statement run in a
// transaction of their own.
func (d *Driver) Executor() driver.Executor {
	return &executor{d: d}
}

// UnwrapExecutor returns an executor that runs every operation inside tx and
// never touches any other connection. It neither commits nor rolls back tx,
// and does not take the driver's in-process write lock. tx may come from any
// handle on the same database file; on the driver's own handle it reuses the
// statements the driver prepared there, on another each statement is
// prepared anew. It should have been begun on a handle opened with
// _txlock=immediate (see [DSN]), so that it holds the write lock from its
// start.
func (d *Driver) UnwrapExecutor(tx *sql.Tx) driver.Executor {
	return &executor{d: d, tx: tx}
}

var (
	_ driver.Driver[*sql.Tx] = (*Driver)(nil)
	_ driver.Notifier        = (*Driver)(nil)
)
