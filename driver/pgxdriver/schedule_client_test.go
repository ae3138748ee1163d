package pgxdriver_test

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/pgxdriver"
	"github.com/sluicehq/sluice/internal/testkit/dbtest"
	"github.com/sluicehq/sluice/internal/testkit/scheduletest"
)

// Schedules ticked by several clients, each over a pool of its own on one
// schema, as processes would be.
func TestSchedules(t *testing.T) {
	t.Parallel()
	scheduletest.Run(t, func(t *testing.T) func() driver.Driver[pgx.Tx] {
		url := dbtest.URL(t)
		schema := dbtest.Schema(t, url)
		return func() driver.Driver[pgx.Tx] {
			cfg, err := pgxpool.ParseConfig(url)
			require.NoError(t, err)
			cfg.MaxConns = 4
			pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
			require.NoError(t, err)
			t.Cleanup(pool.Close)
			return pgxdriver.New(pool, pgxdriver.WithSchema(schema))
		}
	})
}
