package pgxdriver_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

// Claims commit without waiting for their WAL flush, so a server crash can
// forget one. This puts a claimed job back as a forgotten claim leaves it
// (pending at its previous attempt), lets the same client claim it again,
// and checks that the forgotten claim's outcome does not end the new one,
// which has the same ID, attempt and client, and a later AttemptedAt.
func TestForgottenClaimsOutcomeMatchesNothing(t *testing.T) {
	t.Parallel()
	d, pool, _ := newDriver(t)
	ex := d.Executor()
	_, err := ex.JobInsertMany(t.Context(), params(jobs(1, "default")))
	require.NoError(t, err)
	first := claim(t, d, "c", 1)
	require.Len(t, first, 1)
	_, err = pool.Exec(t.Context(), `UPDATE sluice_jobs SET status = 'pending', attempt = attempt - 1,
		locked_by = NULL, locked_until = NULL, attempted_at = NULL WHERE id = $1`, first[0].ID)
	require.NoError(t, err)
	time.Sleep(time.Millisecond) // the clients' clock moves on
	again := claim(t, d, "c", 1)
	require.Len(t, again, 1)
	require.Equal(t, first[0].Attempt, again[0].Attempt)
	require.Equal(t, first[0].LockedBy, again[0].LockedBy)

	end := func(row *driver.JobRow) bool {
		matched, err := ex.JobFinalize(t.Context(), &driver.JobFinalizeParams{Jobs: []*driver.JobFinalize{{
			ID: row.ID, Attempt: row.Attempt, LockedBy: row.LockedBy, AttemptedAt: row.AttemptedAt,
			Status: driver.StatusCompleted, FinalizedAt: time.Now(),
		}}})
		require.NoError(t, err)
		return matched[0]
	}
	require.False(t, end(first[0]), "the forgotten claim's outcome ended the new claim")
	got, err := ex.JobGet(t.Context(), &driver.JobGetParams{ID: again[0].ID})
	require.NoError(t, err)
	require.Equal(t, driver.StatusProcessing, got.Status)
	require.True(t, end(again[0]))
}
