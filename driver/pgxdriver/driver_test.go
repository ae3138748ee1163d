package pgxdriver_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver/drivertest"
	"github.com/sluicehq/sluice/driver/pgxdriver"
	"github.com/sluicehq/sluice/internal/testkit/dbtest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	t.Run("Schema", func(t *testing.T) {
		t.Parallel()
		// The table qualified by WithSchema.
		drivertest.Exercise(t, func(t *testing.T) *drivertest.Setup[pgx.Tx] {
			d, pool, _ := newDriver(t)
			return setup(d, pool)
		})
	})
	t.Run("SearchPath", func(t *testing.T) {
		t.Parallel()
		// The table unqualified, found through the pool's search_path, with
		// a table name of its own.
		drivertest.Exercise(t, func(t *testing.T) *drivertest.Setup[pgx.Tx] {
			pool, _ := dbtest.Pool(t)
			d := pgxdriver.New(pool, pgxdriver.WithTable("queue_jobs"))
			require.NoError(t, d.Migrate(context.Background()), "Migrate")
			return setup(d, pool)
		})
	})
}
