package pgxdriver_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/drivertest"
	"github.com/sluicehq/sluice/driver/pgxdriver"
	"github.com/sluicehq/sluice/internal/testkit/dbtest"
	"github.com/sluicehq/sluice/internal/testkit/pgbouncertest"
)

// The query modes of pgx (the pool's default_query_exec_mode) the
// conformance suite runs in through PgBouncer: the ones that work through
// a pooler in transaction mode without prepared statements by name
// (PgBouncer before 1.21, or with max_prepared_statements = 0), but exec.
// cache_describe is the one docs/many-workers.md recommends; under
// simple_protocol every argument is sent as a quoted literal, so a
// parameter the statement leaves untyped is text, which only this mode
// shows. exec is covered by the two: its parameters are typed by the
// server as cache_describe's are, and encoded as text as simple_protocol's
// are; it passed the whole suite too, and is left out to keep CI short
// (each run of the suite takes about a minute).
var pooledModes = []string{"cache_describe", "simple_protocol"}

// pooledPool returns a pool that reaches the test server through b in
// query mode mode, on a fresh schema (pools through PgBouncer cannot set
// search_path when they connect), closed when t ends, and the schema.
func pooledPool(t *testing.T, b *pgbouncertest.Bouncer, mode string) (*pgxpool.Pool, string) {
	t.Helper()
	direct := dbtest.URL(t)
	schema := dbtest.Schema(t, direct)
	cfg, err := pgxpool.ParseConfig(b.URL(t, direct, "default_query_exec_mode", mode))
	require.NoError(t, err)
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool, schema
}

// TestConformanceThroughPgBouncer runs the conformance suite on pools that
// reach the server through a PgBouncer in transaction mode with four
// server connections, in each query mode that needs no prepared statement
// by name, listening on a direct connection (WithListenURL).
func TestConformanceThroughPgBouncer(t *testing.T) {
	t.Parallel()
	for _, mode := range pooledModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := pgbouncertest.Start(t, pgbouncertest.Options{PoolSize: 4})
			drivertest.Exercise(t, func(t *testing.T) *drivertest.Setup[pgx.Tx] {
				pool, schema := pooledPool(t, b, mode)
				d := pgxdriver.New(pool, pgxdriver.WithSchema(schema), pgxdriver.WithListenURL(dbtest.URL(t)))
				require.NoError(t, d.Migrate(context.Background()), "Migrate")
				return setup(d, pool)
			})
		})
	}
}

// TestListenThroughPooler: a driver whose pool goes through PgBouncer
// refuses to LISTEN on it, and listens on the direct connection
// WithListenURL gives.
func TestListenThroughPooler(t *testing.T) {
	t.Parallel()
	b := pgbouncertest.Start(t, pgbouncertest.Options{PoolSize: 2})
	pool, schema := pooledPool(t, b, "cache_describe")
	d := pgxdriver.New(pool, pgxdriver.WithSchema(schema))
	require.NoError(t, d.Migrate(t.Context()))
	stop, err := d.Listen(t.Context(), func(driver.Notification) {})
	require.ErrorIs(t, err, pgxdriver.ErrListenThroughPooler)
	stop()

	d = pgxdriver.New(pool, pgxdriver.WithSchema(schema), pgxdriver.WithListenURL(dbtest.URL(t)))
	heard := make(chan string, 16)
	stop, err = d.Listen(t.Context(), func(n driver.Notification) {
		select {
		case heard <- n.Queue:
		default:
		}
	})
	require.NoError(t, err)
	defer stop()
	_, err = d.Executor().JobInsertMany(t.Context(), params(jobs(1, "pooled")))
	require.NoError(t, err)
	require.Equal(t, "pooled", <-heard)
}

// TestWithListenURLInvalid: a connection string pgx cannot parse is the
// driver's configuration error.
func TestWithListenURLInvalid(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.Pool(t)
	d := pgxdriver.New(pool, pgxdriver.WithListenURL("postgres://%zz"))
	err := d.Migrate(t.Context())
	require.ErrorContains(t, err, "WithListenURL")
}
