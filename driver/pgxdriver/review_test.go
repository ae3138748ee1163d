package pgxdriver_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

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

// A claim whose caller gives up while it runs must still hand back what it
// claimed, or nothing: never jobs claimed by nobody who knows it.
func TestClaimsUnderCancelledContextsStrandNothing(t *testing.T) {
	t.Parallel()
	d, pool, _ := newDriver(t)
	ex := d.Executor()
	_, err := ex.JobInsertMany(t.Context(), params(jobs(3000, "default")))
	require.NoError(t, err)
	returned := 0
	for i := range 60 {
		ctx, cancel := context.WithTimeout(t.Context(), time.Duration(200+i*100)*time.Microsecond)
		now := time.Now()
		rows, _ := ex.JobClaim(ctx, &driver.JobClaimParams{ClientID: "c", Queue: "default", Topics: []string{"work"},
			Limit: 50, Now: now, LockedUntil: now.Add(time.Minute)})
		cancel()
		returned += len(rows)
	}
	var processing int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM sluice_jobs WHERE status = 'processing'`).Scan(&processing))
	require.Positive(t, processing, "some claims must have run")
	require.Equal(t, processing, returned, "every claimed job was handed to a caller")
}
