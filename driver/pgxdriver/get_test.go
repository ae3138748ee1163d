package pgxdriver_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func TestGetInvalidID(t *testing.T) {
	t.Parallel()
	d, pool, _ := newDriver(t)
	ctx := t.Context()
	for _, id := range []string{"", "not-a-uuid", "0190b6a8-0000-7000-8000-00000000000"} {
		_, err := d.Executor().JobGet(ctx, &driver.JobGetParams{ID: id})
		require.ErrorIs(t, err, driver.ErrNotFound, "id %q", id)
	}
	// In a transaction, the transaction stays usable.
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = d.UnwrapExecutor(tx).JobGet(ctx, &driver.JobGetParams{ID: "nope"})
	require.ErrorIs(t, err, driver.ErrNotFound)
	_, err = d.UnwrapExecutor(tx).JobInsertMany(ctx, &driver.JobInsertManyParams{Jobs: []*driver.JobInsert{newJob("q")}})
	require.NoError(t, err)
}
