package sqlitedriver_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	d, db := newDriver(t, 0)
	insert(t, d.Executor(), newJob())
	for range 3 {
		require.NoError(t, d.Migrate(t.Context()))
	}
	var versions int
	require.NoError(t, db.QueryRowContext(t.Context(), "SELECT count(*) FROM sluice_jobs_migrations").Scan(&versions))
	require.Equal(t, migrationFiles(t), versions, "every migration recorded once")
	require.Len(t, claim(t, d.Executor(), "c", 10), 1, "the data survives")
}

// TestMigrateConcurrently migrates one file from several handles at once,
// as processes starting together do.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	_, path := openDB(t, 0)
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		db, err := sqlitedriver.Open(path)
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		d := sqlitedriver.New(db)
		wg.Go(func() { errs[i] = d.Migrate(context.Background()) })
		wg.Go(func() { _ = d.Migrate(context.Background()) }) // and twice per driver
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	db, err := sqlitedriver.Open(path)
	require.NoError(t, err)
	defer db.Close()
	var versions int
	require.NoError(t, db.QueryRowContext(t.Context(), "SELECT count(*) FROM sluice_jobs_migrations").Scan(&versions))
	require.Equal(t, migrationFiles(t), versions, "every migration recorded once")
}

func TestCustomTable(t *testing.T) {
	t.Parallel()
	d, db := newDriver(t, 0, sqlitedriver.WithTable("_jobs"))
	require.Equal(t, "_jobs", d.Table())
	ex := d.Executor()
	res := insert(t, ex, newJob(), newJob(func(j *driver.JobInsert) { j.UniqueKey = "u" }))
	require.Len(t, claim(t, ex, "c", 10), 2)
	get(t, ex, res[1].Job.ID)

	var tables []string
	rows, err := db.QueryContext(t.Context(), "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
	require.NoError(t, err)
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		tables = append(tables, name)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"_jobs", "_jobs_clients", "_jobs_migrations"}, tables)

	// A second table beside it is independent.
	other := sqlitedriver.New(db)
	require.NoError(t, other.Migrate(t.Context()))
	require.Empty(t, claim(t, other.Executor(), "c", 10))
}

func TestInvalidTable(t *testing.T) {
	t.Parallel()
	db, _ := openDB(t, 0)
	ctx := t.Context()
	for _, name := range []string{"", "1jobs", "jobs; DROP TABLE x", "my-jobs", `"jobs"`} {
		d := sqlitedriver.New(db, sqlitedriver.WithTable(name))
		require.ErrorContains(t, d.Migrate(ctx), "WithTable", name)

		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		for _, ex := range []driver.Executor{d.Executor(), d.UnwrapExecutor(tx)} {
			requireAllFail(t, ex, "WithTable")
		}
		require.NoError(t, tx.Rollback())
	}
}

func TestNilDB(t *testing.T) {
	t.Parallel()
	d := sqlitedriver.New(nil)
	require.ErrorContains(t, d.Migrate(t.Context()), "nil *sql.DB")
	requireAllFail(t, d.Executor(), "nil *sql.DB")
}

// requireAllFail checks that every operation of ex fails with an error
// containing msg.
func requireAllFail(t *testing.T, ex driver.Executor, msg string) {
	t.Helper()
	ctx := t.Context()
	_, err := ex.JobInsertMany(ctx, &driver.JobInsertManyParams{Jobs: []*driver.JobInsert{newJob()}})
	require.ErrorContains(t, err, msg)
	_, err = ex.JobClaim(ctx, &driver.JobClaimParams{ClientID: "c", Queue: "q", Topics: []string{"t"}, Limit: 1})
	require.ErrorContains(t, err, msg)
	_, err = ex.JobFinalize(ctx, &driver.JobFinalizeParams{Jobs: []*driver.JobFinalize{{ID: "x", Status: driver.StatusCompleted}}})
	require.ErrorContains(t, err, msg)
	_, err = ex.JobHeartbeat(ctx, &driver.JobHeartbeatParams{ClientID: "c"})
	require.ErrorContains(t, err, msg)
	_, err = ex.JobRescue(ctx, &driver.JobRescueParams{Limit: 1})
	require.ErrorContains(t, err, msg)
	_, err = ex.JobGet(ctx, &driver.JobGetParams{ID: "x"})
	require.ErrorContains(t, err, msg)
}

// migrationFiles returns how many migrations the driver embeds.
func migrationFiles(t *testing.T) int {
	t.Helper()
	files, err := filepath.Glob("migrations/*.sql")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return len(files)
}
