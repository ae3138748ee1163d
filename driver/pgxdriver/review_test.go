package pgxdriver_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/pgxdriver"
	"github.com/sluicehq/sluice/internal/dbtest"
)

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func insertPending(t *testing.T, ex driver.Executor, n int, now time.Time) {
	t.Helper()
	jobs := make([]*driver.JobInsert, n)
	for i := range jobs {
		jobs[i] = &driver.JobInsert{ID: newUUID(), Topic: "t", Queue: "q", Payload: []byte(`{}`),
			MaxRetries: 3, RunAt: now, CreatedAt: now}
	}
	_, err := ex.JobInsertMany(t.Context(), &driver.JobInsertManyParams{Jobs: jobs})
	require.NoError(t, err)
}

func TestErrorWithNULIsRecorded(t *testing.T) {
	t.Parallel()
	pool, schema := dbtest.Pool(t)
	d := pgxdriver.New(pool, pgxdriver.WithSchema(schema))
	require.NoError(t, d.Migrate(t.Context()))
	ex := d.Executor()
	now := time.Now().UTC().Truncate(time.Microsecond)
	insertPending(t, ex, 1, now)
	rows, err := ex.JobClaim(t.Context(), &driver.JobClaimParams{ClientID: "c", Queue: "q", Topics: []string{"t"},
		Limit: 1, Now: now, LockedUntil: now.Add(time.Minute)})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	matched, err := ex.JobFinalize(t.Context(), &driver.JobFinalizeParams{Jobs: []*driver.JobFinalize{{
		ID: rows[0].ID, Attempt: 1, LockedBy: "c", Status: driver.StatusFailed, FinalizedAt: now,
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
	pool, schema := dbtest.Pool(t)
	d := pgxdriver.New(pool, pgxdriver.WithSchema(schema))
	require.NoError(t, d.Migrate(t.Context()))
	now := time.Now()
	for _, j := range []*driver.JobInsert{
		{ID: newUUID(), Topic: "t", Queue: "q", Payload: []byte(`{}`), Priority: 1 << 31, RunAt: now, CreatedAt: now},
		{ID: newUUID(), Topic: "t", Queue: "q", Payload: []byte(`{}`), MaxRetries: 1 << 40, RunAt: now, CreatedAt: now},
	} {
		_, err := d.Executor().JobInsertMany(t.Context(), &driver.JobInsertManyParams{Jobs: []*driver.JobInsert{j}})
		require.ErrorContains(t, err, "32-bit range")
	}
}

// A claim whose caller gives up while it runs must still hand back what it
// claimed, or nothing: never jobs claimed by nobody who knows it.
func TestClaimsUnderCancelledContextsStrandNothing(t *testing.T) {
	t.Parallel()
	pool, schema := dbtest.Pool(t)
	d := pgxdriver.New(pool, pgxdriver.WithSchema(schema))
	require.NoError(t, d.Migrate(t.Context()))
	ex := d.Executor()
	now := time.Now().UTC().Truncate(time.Microsecond)
	insertPending(t, ex, 3000, now)
	returned := 0
	for i := range 60 {
		ctx, cancel := context.WithTimeout(t.Context(), time.Duration(200+i*100)*time.Microsecond)
		rows, _ := ex.JobClaim(ctx, &driver.JobClaimParams{ClientID: "c", Queue: "q", Topics: []string{"t"},
			Limit: 50, Now: now, LockedUntil: now.Add(time.Minute)})
		cancel()
		returned += len(rows)
	}
	var processing int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM sluice_jobs WHERE status = 'processing'`).Scan(&processing))
	require.Equal(t, processing, returned, "every claimed job was handed to a caller")
}
