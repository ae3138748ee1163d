package pgxdriver_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

// TestFinalizeInvalidID checks that an item whose ID is not a UUID matches
// nothing, and the rest of the batch is finalized.
func TestFinalizeInvalidID(t *testing.T) {
	t.Parallel()
	d, _, _ := newDriver(t)
	ctx := t.Context()
	_, err := d.Executor().JobInsertMany(ctx, params(jobs(1, "default")))
	require.NoError(t, err)
	rows := claim(t, d, "c", 1)
	matched, err := d.Executor().JobFinalize(ctx, &driver.JobFinalizeParams{Jobs: []*driver.JobFinalize{
		{ID: "bogus", Attempt: 1, LockedBy: "c", Status: driver.StatusCompleted},
		{ID: rows[0].ID, Attempt: 1, LockedBy: "c", AttemptedAt: rows[0].AttemptedAt, Status: driver.StatusCompleted,
			FinalizedAt: rows[0].AttemptedAt},
	}})
	require.NoError(t, err)
	require.Equal(t, []bool{false, true}, matched)
}

// An attempt's error holding a NUL byte, which Postgres text cannot hold,
// is recorded with the byte replaced.
func TestErrorWithNULIsRecorded(t *testing.T) {
	t.Parallel()
	d, _, _ := newDriver(t)
	ex := d.Executor()
	_, err := ex.JobInsertMany(t.Context(), params(jobs(1, "default")))
	require.NoError(t, err)
	rows := claim(t, d, "c", 1)
	require.Len(t, rows, 1)
	now := time.Now()
	matched, err := ex.JobFinalize(t.Context(), &driver.JobFinalizeParams{Jobs: []*driver.JobFinalize{{
		ID: rows[0].ID, Attempt: 1, LockedBy: "c", AttemptedAt: rows[0].AttemptedAt, Status: driver.StatusFailed, FinalizedAt: now,
		Error: &driver.AttemptError{Attempt: 1, At: now, Error: "bad\x00byte", Trace: "x\x00y"},
	}}})
	require.NoError(t, err, "a NUL in an error must not make the outcome unwritable")
	require.Equal(t, []bool{true}, matched)
	got, err := ex.JobGet(t.Context(), &driver.JobGetParams{ID: rows[0].ID})
	require.NoError(t, err)
	require.Equal(t, "bad\uFFFDbyte", got.Errors[0].Error)
}
