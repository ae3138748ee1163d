package pgxdriver

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/batch"
	"github.com/sluicehq/sluice/driver/internal/sqlident"
)

// DefaultTable is the name of the jobs table unless [WithTable] says
// otherwise.
const DefaultTable = "sluice_jobs"

// maxTableLen is the longest table name accepted: the longest index name
// derived from it ("<table>_unique_key_idx") must fit Postgres's 63 bytes.
const maxTableLen = 63 - len("_unique_key_idx")

// ErrListenDisabled is returned by [Driver.Listen] on a driver created with
// [WithoutListen].
var ErrListenDisabled = errors.New("pgxdriver: LISTEN disabled by WithoutListen")

// ErrListenThroughPooler is returned by [Driver.Listen] when the pool's
// connections go through a connection pooler (PgBouncer, say) and no
// direct connection was given with [WithListenURL]: in transaction
// pooling a LISTEN stays behind on whichever server connection ran it,
// and its notifications never reach the listener. The client then polls.
var ErrListenThroughPooler = errors.New("pgxdriver: the pool connects through a pooler, where LISTEN has no session of its own; " +
	"give a direct connection with WithListenURL, or clients poll")

// Driver is a sluice driver over a Postgres database reached through a
// pgx/v5 pool. It implements driver.Driver[pgx.Tx], driver.Notifier and
// driver.Maintainer. It is safe for concurrent use.
type Driver struct {
	pool   *pgxpool.Pool
	schema string
	table  string
	// err is a configuration error found by New; every operation returns
	// it.
	err      error
	noListen bool
	// listenCfg is the connection [Driver.Listen] makes, from
	// [WithListenURL]; nil means the pool's.
	listenCfg *pgx.ConnConfig
	vacuum    vacuumPolicy
	// inserts combines small inserts on the pool (see
	// [executor.insertPlain]).
	inserts *batch.Queue[insertReq]
	later   laterNotifier
	q       *queries
}

// Option configures a [Driver].
type Option func(*Driver)

// WithSchema puts the jobs table in the schema name, created by
// [Driver.Migrate] if it does not exist. By default the table name is not
// qualified, so it resolves through the connections' search_path. name must
// be a plain SQL identifier (letters, digits and underscores, not starting
// with a digit); otherwise Migrate and every operation return an error.
func WithSchema(name string) Option {
	return func(d *Driver) {
		if !sqlident.IsPlain(name) || len(name) > 63 {
			d.setErr(fmt.Errorf("pgxdriver: WithSchema: invalid schema name %q: want a plain SQL identifier matching %s, at most 63 bytes", name, sqlident.PlainPattern))
			return
		}
		d.schema = name
	}
}

// WithTable sets the name of the jobs table; the default is [DefaultTable].
// The migrations table is named after it, with the suffix "_migrations",
// and so are the tables of client records (suffix "_clients") and of
// schedules ("_schedules"), and its indexes. name must be a plain SQL identifier (letters, digits
// and underscores, not starting with a digit) of at most 48 bytes;
// otherwise Migrate and every operation return an error.
func WithTable(name string) Option {
	return func(d *Driver) {
		if !sqlident.IsPlain(name) || len(name) > maxTableLen {
			d.setErr(fmt.Errorf("pgxdriver: WithTable: invalid table name %q: want a plain SQL identifier matching %s, at most %d bytes", name, sqlident.PlainPattern, maxTableLen))
			return
		}
		d.table = name
	}
}

// WithoutListen makes [Driver.Listen] return [ErrListenDisabled], so that a
// client polls instead of holding a connection in LISTEN. Behind a pooler,
// Listen already refuses (see [ErrListenThroughPooler]) unless
// [WithListenURL] gives it a direct connection; WithoutListen spares even
// the connection it opens to find out. Inserts still send notifications,
// for listeners that connect directly.
func WithoutListen() Option {
	return func(d *Driver) { d.noListen = true }
}

// WithListenURL makes [Driver.Listen] connect with connString (a URL or
// keyword/value string, as pgx.ParseConfig takes it) instead of the pool's
// configuration. Give it a direct connection to the server when the pool
// goes through a pooler in transaction mode (PgBouncer's
// pool_mode=transaction, say): LISTEN needs a session of its own, which
// only a direct connection (or a pooler in session mode) keeps. Each
// listening client holds one such connection. Listen trusts connString to
// keep a session and does not check it. An invalid connString makes
// Migrate and every operation return the error.
func WithListenURL(connString string) Option {
	return func(d *Driver) {
		cfg, err := pgx.ParseConfig(connString)
		if err != nil {
			d.setErr(fmt.Errorf("pgxdriver: WithListenURL: %w", err))
			return
		}
		d.listenCfg = cfg
	}
}

func (d *Driver) setErr(err error) {
	if d.err == nil {
		d.err = err
	}
}

// New returns a driver over pool. It starts nothing and does not touch the
// database: sluice.NewClient creates and migrates the schema (unless its
// Config.SkipMigrations is set); [Driver.Migrate] is for migrating without
// a client, such as from a deployment step.
func New(pool *pgxpool.Pool, opts ...Option) *Driver {
	d := &Driver{pool: pool, table: DefaultTable, vacuum: vacuumPolicy{
		every: vacuumCheckEvery, minDead: vacuumMinDead, perLive: vacuumDeadShare,
		analyzeEvery: analyzeAtMostEvery, analyzeUnfixed: analyzeUnfixed,
	}}
	for _, opt := range opts {
		opt(d)
	}
	if pool == nil {
		d.setErr(errors.New("pgxdriver: New: nil *pgxpool.Pool"))
	}
	d.inserts = batch.New(maxCombined, insertSize, d.insertCombined)
	d.q = newQueries(d.ident(d.table), d.countsTable(), d.countLogTable(), d.channel(), d.queuesTable(), d.limitsTable(), d.groupsTable())
	return d
}

// Table returns the jobs table's name as used in SQL: quoted, and qualified
// by its schema when [WithSchema] set one.
func (d *Driver) Table() string { return d.ident(d.table) }

// Channel returns the name of the channel inserts notify and
// [Driver.Listen] listens on: the table's name, qualified by its schema when
// [WithSchema] set one, shortened with a hash to Postgres's 63-byte limit.
func (d *Driver) Channel() string { return d.channel() }

// ident returns name quoted and qualified by the driver's schema.
func (d *Driver) ident(name string) string {
	if d.schema == "" {
		return pgx.Identifier{name}.Sanitize()
	}
	return pgx.Identifier{d.schema, name}.Sanitize()
}

func (d *Driver) channel() string {
	ch := d.table
	if d.schema != "" {
		ch = d.schema + "." + d.table
	}
	if len(ch) <= 63 {
		return ch
	}
	sum := sha256.Sum256([]byte(ch))
	return ch[:46] + "_" + hex.EncodeToString(sum[:8])
}

// Executor returns an executor that runs each operation on the driver's
// pool. Operations of more than one statement run in a transaction of their
// own, so each is atomic.
func (d *Driver) Executor() driver.Executor {
	return &executor{d: d, db: d.pool}
}

// UnwrapExecutor returns an executor that runs every operation inside tx,
// the caller's own transaction on the same database (from any pool or
// connection). It neither commits nor rolls back tx. Inserts notify
// listeners in tx, so the notification is sent only if tx commits.
//
// pgx does not roll a transaction back when a context is cancelled: after
// an operation fails, roll tx back.
func (d *Driver) UnwrapExecutor(tx pgx.Tx) driver.Executor {
	return &executor{d: d, db: tx, inTx: true}
}

var (
	_ driver.Driver[pgx.Tx] = (*Driver)(nil)
	_ driver.Notifier       = (*Driver)(nil)
)

// tableIdent returns the jobs table's name as a pgx identifier.
func (d *Driver) tableIdent() pgx.Identifier {
	if d.schema == "" {
		return pgx.Identifier{d.table}
	}
	return pgx.Identifier{d.schema, d.table}
}
