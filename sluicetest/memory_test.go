package sluicetest_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver/drivertest"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/sluicetest"
)

// TestMemoryDriverConformance runs the drivers' conformance suite on the
// in-memory database: it is a SQLite database like any other.
func TestMemoryDriverConformance(t *testing.T) {
	t.Parallel()
	drivertest.Exercise(t, func(t *testing.T) *drivertest.Setup[*sql.Tx] {
		db := sluicetest.OpenMemory(t)
		d := sqlitedriver.New(db)
		require.NoError(t, d.Migrate(context.Background()))
		return &drivertest.Setup[*sql.Tx]{
			Driver:   d,
			Begin:    func(ctx context.Context) (*sql.Tx, error) { return db.BeginTx(ctx, nil) },
			Commit:   func(_ context.Context, tx *sql.Tx) error { return tx.Commit() },
			Rollback: func(_ context.Context, tx *sql.Tx) error { return tx.Rollback() },
		}
	})
}

// TestMemoryDatabasesArePrivate gives each handle its own database, shared
// by all of its connections, and gone once closed.
func TestMemoryDatabasesArePrivate(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a, b := sluicetest.OpenMemory(t), sluicetest.OpenMemory(t)
	_, err := a.ExecContext(ctx, `CREATE TABLE x (v INTEGER)`)
	require.NoError(t, err)
	_, err = b.ExecContext(ctx, `SELECT * FROM x`)
	require.ErrorContains(t, err, "no such table", "b is another database")

	// Every connection of a sees the table; writers take turns.
	conns := make([]*sql.Conn, 3)
	for i := range conns {
		conns[i], err = a.Conn(ctx)
		require.NoError(t, err)
		_, err = conns[i].ExecContext(ctx, `INSERT INTO x VALUES (?)`, i)
		require.NoError(t, err)
	}
	for _, c := range conns {
		require.NoError(t, c.Close())
	}
	var n int
	require.NoError(t, a.QueryRowContext(ctx, `SELECT count(*) FROM x`).Scan(&n))
	require.Equal(t, 3, n)
}
