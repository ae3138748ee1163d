package sqlitedriver_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/drivertest"
)

// The driver's claims and completions count what they change themselves
// and mark their rows so that the count trigger passes over them; any
// other write to the table, such as an UPDATE written by hand, is counted
// by the triggers. Each step compares the kept counts with a count of the
// table.
func TestCountsOfWritesOutsideTheDriver(t *testing.T) {
	t.Parallel()
	d, db := newDriver(t, 0)
	ex := d.Executor()
	ctx := t.Context()
	agree := func(step string) {
		t.Helper()
		drivertest.RequireCountsAgree(t, ex, base.Add(time.Hour), step)
	}
	insert(t, ex, newJob(), newJob(), newJob(), newJob())
	claimed := claim(t, ex, "c", 2)
	require.Len(t, claimed, 2)
	agree("claimed by the driver")
	for _, sql := range []string{
		`UPDATE sluice_jobs SET status = 'cancelled', finalized_at = 1 WHERE status = 'pending'`,
		`UPDATE sluice_jobs SET queue = 'elsewhere' WHERE status = 'cancelled'`,
		fmt.Sprintf(`UPDATE sluice_jobs SET status = 'pending', locked_by = NULL, locked_until = NULL WHERE id = '%s'`, claimed[0].ID),
		`INSERT INTO sluice_jobs (id, topic, queue, payload, run_at, created_at) VALUES ('by-hand', 'email', 'default', '{}', 1, 1), ('by-hand-2', 'other', 'q', '{}', 1, 1)`,
		`DELETE FROM sluice_jobs WHERE status = 'cancelled'`,
	} {
		_, err := db.ExecContext(ctx, sql)
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
}
