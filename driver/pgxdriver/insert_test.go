package pgxdriver_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

// Priorities and retry counts beyond Postgres's integer are refused, not
// truncated.
func TestInsertRejectsIntsOutOfRange(t *testing.T) {
	t.Parallel()
	d, _, _ := newDriver(t)
	wide, deep := newJob("default"), newJob("default")
	wide.Priority, deep.MaxRetries = 1<<31, 1<<40
	for _, j := range []*driver.JobInsert{wide, deep} {
		_, err := d.Executor().JobInsertMany(t.Context(), params([]*driver.JobInsert{j}))
		require.ErrorContains(t, err, "32-bit range")
	}
}
