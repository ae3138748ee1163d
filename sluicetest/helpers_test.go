package sluicetest_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/pgxdriver"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/internal/testkit/dbtest"
	"github.com/sluicehq/sluice/sluicetest"
)

// env is one test's database, reached through a driver whose transaction
// type is TTx.
type env[TTx any] struct {
	driver   driver.Driver[TTx]
	begin    func(t *testing.T) TTx
	rollback func(t *testing.T, tx TTx)
	commit   func(t *testing.T, tx TTx)
}

// onBothDrivers runs the generic test on the in-memory SQLite database and
// on a Postgres schema of its own.
func onBothDrivers(t *testing.T, onSQLite func(*testing.T, *env[*sql.Tx]), onPostgres func(*testing.T, *env[pgx.Tx])) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		db := sluicetest.OpenMemory(t)
		onSQLite(t, &env[*sql.Tx]{
			driver: sqlitedriver.New(db),
			begin: func(t *testing.T) *sql.Tx {
				tx, err := db.BeginTx(t.Context(), nil)
				require.NoError(t, err)
				t.Cleanup(func() { _ = tx.Rollback() })
				return tx
			},
			rollback: func(t *testing.T, tx *sql.Tx) { require.NoError(t, tx.Rollback()) },
			commit:   func(t *testing.T, tx *sql.Tx) { require.NoError(t, tx.Commit()) },
		})
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		pool, schema := dbtest.Pool(t)
		onPostgres(t, &env[pgx.Tx]{
			driver: pgxdriver.New(pool, pgxdriver.WithSchema(schema)),
			begin: func(t *testing.T) pgx.Tx {
				tx, err := pool.Begin(t.Context())
				require.NoError(t, err)
				t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
				return tx
			},
			rollback: func(t *testing.T, tx pgx.Tx) { require.NoError(t, tx.Rollback(t.Context())) },
			commit:   func(t *testing.T, tx pgx.Tx) { require.NoError(t, tx.Commit(t.Context())) },
		})
	})
}

// client returns a client over the env's database with cfg, not started.
func (e *env[TTx]) client(t *testing.T, cfg *sluice.Config) *sluice.Client[TTx] {
	t.Helper()
	c, err := sluice.NewClient(e.driver, cfg)
	require.NoError(t, err)
	return c
}

// recorder is a testing.TB that records a check's failure instead of
// failing the test, so that tests can check that the checks fail when
// they should, and say why. The checks return after Fatalf, as its
// callers would not.
type recorder struct {
	testing.TB
	failures []string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func (r *recorder) Errorf(format string, args ...any) { r.Fatalf(format, args...) }

// fails runs fn with a recorder and requires it to fail once, with a
// message containing each of msgs.
func fails(t *testing.T, fn func(tb testing.TB), msgs ...string) {
	t.Helper()
	r := &recorder{TB: t}
	fn(r)
	require.Len(t, r.failures, 1, "want one failure")
	for _, m := range msgs {
		require.Contains(t, r.failures[0], m)
	}
}

// passes runs fn with a recorder and requires it not to fail.
func passes(t *testing.T, fn func(tb testing.TB)) {
	t.Helper()
	r := &recorder{TB: t}
	fn(r)
	require.Empty(t, r.failures)
}

// Args of the tests' jobs.

type mailArgs struct {
	To string `json:"to"`
}

func (mailArgs) Topic() string { return "mail" }

type smsArgs struct {
	To string `json:"to"`
}

func (smsArgs) Topic() string { return "sms" }
