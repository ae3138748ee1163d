package sqlitedriver_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/sluicehq/sluice/driver/drivertest"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		maxConns int
		// readDB gives the driver a read handle of its own (WithReadDB),
		// as PocketBase keeps its database: one write connection.
		readDB bool
	}{
		{"Pool", 0, false},
		{"SingleConnection", 1, false},
		{"SingleWriterWithReadDB", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			drivertest.Exercise(t, func(t *testing.T) *drivertest.Setup[*sql.Tx] {
				newDB := func(t *testing.T) (*sqlitedriver.Driver, *sql.DB) { return newDriver(t, tc.maxConns) }
				if tc.readDB {
					newDB = newDriverWithReadDB
				}
				d, db := newDB(t)
				return &drivertest.Setup[*sql.Tx]{
					Driver: d,
					Begin: func(ctx context.Context) (*sql.Tx, error) {
						return db.BeginTx(ctx, nil)
					},
					Commit:   func(_ context.Context, tx *sql.Tx) error { return tx.Commit() },
					Rollback: func(_ context.Context, tx *sql.Tx) error { return tx.Rollback() },
				}
			})
		})
	}
}
