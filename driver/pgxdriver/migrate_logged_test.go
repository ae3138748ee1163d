package pgxdriver_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

// TestMigrationCountsLogsLoggedBefore: the migration that adds the count
// of records logged gives the jobs that logged before it theirs, and
// leaves the others without.
func TestMigrationCountsLogsLoggedBefore(t *testing.T) {
	t.Parallel()
	d, pool, schema := newDriver(t)
	ctx := t.Context()
	res, err := d.Executor().JobInsertMany(ctx, params([]*driver.JobInsert{newJob("q"), newJob("q")}))
	require.NoError(t, err)
	logged, silent := res[0].Job.ID, res[1].Job.ID
	// As a job that logged before the migration has it.
	_, err = pool.Exec(ctx, `UPDATE `+schema+`.sluice_jobs SET logged = NULL,
		logs = '{"records": [{"msg": "a"}, {"msg": "b"}], "dropped": 3}' WHERE id = $1`, logged)
	require.NoError(t, err)
	ms, err := d.Migrations()
	require.NoError(t, err)
	_, err = pool.Exec(ctx, ms["0010_logged.sql"])
	require.NoError(t, err)
	five := 5
	for id, want := range map[string]*int{logged: &five, silent: nil} {
		var got *int
		require.NoError(t, pool.QueryRow(ctx, `SELECT logged FROM `+schema+`.sluice_jobs WHERE id = $1`, id).Scan(&got))
		require.Equal(t, want, got)
	}
}
