package sqlitedriver_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/internal/testkit/sqlitetest"
)

// newDriverWithReadDB returns a migrated driver over a fresh database
// with a write handle of one connection and a read handle beside it, and
// the write handle.
func newDriverWithReadDB(t *testing.T) (*sqlitedriver.Driver, *sql.DB) {
	t.Helper()
	writer, path := openDBAt(t, sqlitetest.Path(t), 1)
	reader, err := sql.Open("sqlite", sqlitedriver.DSN(path))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, reader.Close()) })
	d := sqlitedriver.New(writer, sqlitedriver.WithReadDB(reader))
	require.NoError(t, d.Migrate(t.Context()))
	return d, writer
}

// TestWithReadDB runs the driver as PocketBase keeps its database: a write
// handle of one connection and a read handle beside it. While a caller's
// transaction holds the only write connection, every read outside a
// transaction still answers from the read handle; a driver that read on
// the write handle would wait for the transaction until the deadline.
func TestWithReadDB(t *testing.T) {
	t.Parallel()
	writer, path := openDB(t, 1)
	reader, err := sql.Open("sqlite", sqlitedriver.DSN(path))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, reader.Close()) })

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	d := sqlitedriver.New(writer, sqlitedriver.WithReadDB(reader))
	require.NoError(t, d.Migrate(ctx))
	ex := d.Executor()
	res := insert(t, ex, newJob())
	id := res[0].Job.ID

	tx, err := writer.BeginTx(ctx, nil)
	require.NoError(t, err)
	// The transaction's own write, not committed: the read handle must not
	// see it.
	insert(t, d.UnwrapExecutor(tx), newJob())

	got, err := ex.JobGet(ctx, &driver.JobGetParams{ID: id})
	require.NoError(t, err)
	require.Equal(t, id, got.ID)
	list, err := ex.JobList(ctx, &driver.JobListParams{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 1, list.Total, "the uncommitted job is not visible outside its transaction")
	stats, err := ex.JobStats(ctx, &driver.JobStatsParams{Since: base.Add(-time.Hour), Bucket: time.Minute})
	require.NoError(t, err)
	require.NotEmpty(t, stats.Counts)
	ch, err := ex.JobChanges(ctx, &driver.JobChangesParams{Running: true, Limit: 10})
	require.NoError(t, err)
	require.Empty(t, ch.Running)
	_, err = ex.ClientList(ctx, &driver.ClientListParams{SeenSince: base.Add(-time.Hour)})
	require.NoError(t, err)
	_, err = ex.ScheduleList(ctx, &driver.ScheduleListParams{Kind: driver.ScheduleStored})
	require.NoError(t, err)
	_, err = ex.QueueLoad(ctx, &driver.QueueLoadParams{Queue: "default", Now: base, AheadLimit: 10})
	require.NoError(t, err)
	require.NoError(t, tx.Commit())

	// Writes go to the write handle and reads see them once committed.
	insert(t, ex, newJob())
	list, err = ex.JobList(ctx, &driver.JobListParams{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 3, list.Total)
	claimed, err := ex.JobClaim(ctx, &driver.JobClaimParams{
		ClientID: "c", Queue: "default", Topics: []string{"email"}, Limit: 3, Now: base, LockedUntil: base.Add(time.Minute),
	})
	require.NoError(t, err)
	require.Len(t, claimed, 3)
	require.NoError(t, ctx.Err())
}
