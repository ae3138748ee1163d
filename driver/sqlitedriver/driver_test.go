package sqlitedriver_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/sluicehq/sluice/driver/drivertest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		maxConns int
	}{
		{"Pool", 0},
		{"SingleConnection", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			drivertest.Exercise(t, func(t *testing.T) *drivertest.Setup[*sql.Tx] {
				d, db := newDriver(t, tc.maxConns)
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
