package pgxdriver_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/drivertest"
)

// The driver's claims and completions log what they change themselves
// and mark their rows so that the count trigger passes over them; any
// other write to the table, such as an UPDATE written by hand, is counted
// by the triggers. Each step compares the kept counts with a count of the
// table.
func TestCountsOfWritesOutsideTheDriver(t *testing.T) {
	t.Parallel()
	d, pool, _ := newDriver(t)
	ex := d.Executor()
	ctx := t.Context()
	agree := func(step string) {
		t.Helper()
		drivertest.RequireCountsAgree(t, ex, time.Now().Add(time.Hour), step)
	}
	_, err := ex.JobInsertMany(ctx, params(jobs(4, "default")))
	require.NoError(t, err)
	claimed := claim(t, d, "c", 2)
	require.Len(t, claimed, 2)
	agree("claimed by the driver")
	for _, sql := range []string{
		`UPDATE sluice_jobs SET status = 'cancelled', finalized_at = now() WHERE status = 'pending'`,
		`UPDATE sluice_jobs SET queue = 'elsewhere' WHERE status = 'cancelled'`,
		`UPDATE sluice_jobs SET status = 'pending', locked_by = NULL, locked_until = NULL WHERE id = '` + claimed[0].ID + `'`,
		`INSERT INTO sluice_jobs (id, topic, queue, payload, run_at, created_at)
			VALUES (gen_random_uuid(), 'work', 'default', '{}', now(), now()), (gen_random_uuid(), 'other', 'q', '{}', now(), now())`,
		`DELETE FROM sluice_jobs WHERE status = 'cancelled'`,
	} {
		_, err := pool.Exec(ctx, sql)
		require.NoError(t, err, sql)
		agree(sql)
	}
	matched, err := ex.JobFinalize(ctx, &driver.JobFinalizeParams{Jobs: []*driver.JobFinalize{{
		ID: claimed[1].ID, Attempt: claimed[1].Attempt, LockedBy: "c", AttemptedAt: claimed[1].AttemptedAt,
		Status: driver.StatusCompleted, FinalizedAt: time.Now(),
	}}})
	require.NoError(t, err)
	require.Equal(t, []bool{true}, matched)
	agree("completed by the driver")
	_, err = pool.Exec(ctx, `TRUNCATE sluice_jobs`)
	require.NoError(t, err)
	agree("truncated")
}
