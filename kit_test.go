package sluice_test

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/pgxdriver"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/internal/testkit/dbtest"
	"github.com/sluicehq/sluice/internal/testkit/sqlitetest"
)

// onBothDrivers runs a test on SQLite and on Postgres, as parallel subtests
// named after them, each on a database of its own. The two functions are
// one generic test instantiated for each driver's transaction type, as in
// onBothDrivers(t, testX[*sql.Tx], testX[pgx.Tx]). Postgres subtests skip,
// or fail under SLUICE_REQUIRE_POSTGRES=1, when there is no server (see
// internal/testkit/dbtest).
func onBothDrivers(t *testing.T, onSQLite func(*testing.T, *kit[*sql.Tx]), onPostgres func(*testing.T, *kit[pgx.Tx])) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		onSQLite(t, sqliteKit(t))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		onPostgres(t, postgresKit(t))
	})
}

// kit is one test's database, reached through a driver whose transaction
// type is TTx. What differs between databases (transactions, placeholders,
// how a time is stored) is kept here, so that one test serves every driver.
type kit[TTx any] struct {
	driver driver.Driver[TTx]
	exec   driver.Executor
	// deaf returns another driver over the same database whose clients hear
	// of no enqueue made through driver: they find jobs by polling only.
	deaf func() driver.Driver[TTx]

	begin    func(ctx context.Context) (TTx, error)
	commit   func(ctx context.Context, tx TTx) error
	rollback func(ctx context.Context, tx TTx) error
	// db runs statements outside any transaction, in returns one that runs
	// them in tx.
	db conn
	in func(tx TTx) conn
}

// conn runs SQL written with ? placeholders, passing time.Time arguments
// in the form the driver stores times.
type conn interface {
	exec(ctx context.Context, query string, args ...any) error
	queryInt(ctx context.Context, query string, args ...any) (int, error)
}

// The business table a job's transaction writes to: an order names the
// job, or the test, that wrote it.
const (
	insertOrder = `INSERT INTO orders (ref) VALUES (?)`
	countOrders = `SELECT count(*) FROM orders WHERE ref = ?`
)

func sqliteKit(t testing.TB) *kit[*sql.Tx] {
	t.Helper()
	db, err := sqlitedriver.Open(sqlitetest.Path(t))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	_, err = db.Exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY, ref TEXT)`)
	require.NoError(t, err)
	d := sqlitedriver.New(db)
	return &kit[*sql.Tx]{
		driver:   d,
		exec:     d.Executor(),
		deaf:     func() driver.Driver[*sql.Tx] { return sqlitedriver.New(db) }, // it hears its own inserts only
		begin:    func(ctx context.Context) (*sql.Tx, error) { return db.BeginTx(ctx, nil) },
		commit:   func(_ context.Context, tx *sql.Tx) error { return tx.Commit() },
		rollback: func(_ context.Context, tx *sql.Tx) error { return tx.Rollback() },
		db:       sqliteConn{db},
		in:       func(tx *sql.Tx) conn { return sqliteConn{tx} },
	}
}

// sqliteConn runs statements on a *sql.DB or a *sql.Tx. SQLite stores a
// time as integer microseconds since the Unix epoch.
type sqliteConn struct {
	q interface {
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
		QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	}
}

func (c sqliteConn) exec(ctx context.Context, query string, args ...any) error {
	_, err := c.q.ExecContext(ctx, query, sqliteArgs(args)...)
	return err
}

func (c sqliteConn) queryInt(ctx context.Context, query string, args ...any) (int, error) {
	var n int
	err := c.q.QueryRowContext(ctx, query, sqliteArgs(args)...).Scan(&n)
	return n, err
}

func sqliteArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		if tm, ok := a.(time.Time); ok {
			a = tm.UnixMicro()
		}
		out[i] = a
	}
	return out
}

func postgresKit(t testing.TB) *kit[pgx.Tx] {
	t.Helper()
	pool, schema := dbtest.Pool(t)
	_, err := pool.Exec(t.Context(), `CREATE TABLE orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, ref text)`)
	require.NoError(t, err)
	// The schema names the channel that inserts notify too, so that tests
	// running at once do not wake each other's clients.
	d := pgxdriver.New(pool, pgxdriver.WithSchema(schema))
	return &kit[pgx.Tx]{
		driver: d,
		exec:   d.Executor(),
		deaf: func() driver.Driver[pgx.Tx] {
			return pgxdriver.New(pool, pgxdriver.WithSchema(schema), pgxdriver.WithoutListen())
		},
		begin:    pool.Begin,
		commit:   func(ctx context.Context, tx pgx.Tx) error { return tx.Commit(ctx) },
		rollback: func(ctx context.Context, tx pgx.Tx) error { return tx.Rollback(ctx) },
		db:       pgConn{pool},
		in:       func(tx pgx.Tx) conn { return pgConn{tx} },
	}
}

// pgConn runs statements on a pool or a pgx.Tx, numbering the
// placeholders as Postgres wants them. Times are timestamptz, which pgx
// encodes from a time.Time as it is.
type pgConn struct {
	q interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
		QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	}
}

func (c pgConn) exec(ctx context.Context, query string, args ...any) error {
	_, err := c.q.Exec(ctx, numbered(query), args...)
	return err
}

func (c pgConn) queryInt(ctx context.Context, query string, args ...any) (int, error) {
	var n int
	err := c.q.QueryRow(ctx, numbered(query), args...).Scan(&n)
	return n, err
}

// numbered replaces the ? placeholders of query with $1, $2 and so on.
func numbered(query string) string {
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r != '?' {
			b.WriteRune(r)
			continue
		}
		n++
		b.WriteString("$" + strconv.Itoa(n))
	}
	return b.String()
}

// client returns a client over the kit's driver; see startClient.
func (k *kit[TTx]) client(t *testing.T, cfg *sluice.Config) *sluice.Client[TTx] {
	t.Helper()
	return startClient(t, k.driver, cfg)
}

// startClient returns a client over d; if it has workers it is started,
// and stopped at cleanup.
func startClient[TTx any](t *testing.T, d driver.Driver[TTx], cfg *sluice.Config) *sluice.Client[TTx] {
	t.Helper()
	if cfg == nil {
		cfg = &sluice.Config{}
	}
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	c, err := sluice.NewClient(d, cfg)
	require.NoError(t, err)
	if cfg.Workers != nil {
		require.NoError(t, c.Start(t.Context()))
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, c.Stop(ctx))
		})
	}
	return c
}

// tx begins a transaction, rolled back at cleanup unless it has ended.
func (k *kit[TTx]) tx(t *testing.T) TTx {
	t.Helper()
	tx, err := k.begin(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { _ = k.rollback(context.Background(), tx) })
	return tx
}

// end commits tx, or rolls it back.
func (k *kit[TTx]) end(t *testing.T, tx TTx, commit bool) {
	t.Helper()
	if commit {
		require.NoError(t, k.commit(t.Context(), tx))
	} else {
		require.NoError(t, k.rollback(t.Context(), tx))
	}
}

// order writes an order named ref in tx: the business write a job's
// transaction makes.
func (k *kit[TTx]) order(ctx context.Context, tx TTx, ref string) error {
	return k.in(tx).exec(ctx, insertOrder, ref)
}

// orders returns how many orders named ref are committed.
func (k *kit[TTx]) orders(t *testing.T, ref string) int {
	t.Helper()
	n, err := k.db.queryInt(t.Context(), countOrders, ref)
	require.NoError(t, err)
	return n
}

// count returns how many jobs the table holds.
func (k *kit[TTx]) count(t *testing.T) int {
	t.Helper()
	n, err := k.db.queryInt(t.Context(), `SELECT count(*) FROM sluice_jobs`)
	require.NoError(t, err)
	return n
}

// run runs a statement outside any transaction, to set up a state no
// client call makes.
func (k *kit[TTx]) run(t *testing.T, query string, args ...any) {
	t.Helper()
	require.NoError(t, k.db.exec(t.Context(), query, args...))
}
