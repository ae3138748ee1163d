package sqlitedriver_test

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/internal/testkit/scheduletest"
)

// Schedules ticked by several clients, each over a handle of its own on
// one file, as processes would be.
func TestSchedules(t *testing.T) {
	t.Parallel()
	scheduletest.Run(t, func(t *testing.T) func() driver.Driver[*sql.Tx] {
		_, _, path := newDriverPath(t)
		return func() driver.Driver[*sql.Tx] {
			db, err := sqlitedriver.Open(path)
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			return sqlitedriver.New(db)
		}
	})
}
