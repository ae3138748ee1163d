package sqlitedriver_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

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
	require.Equal(t, []string{"_jobs", "_jobs_acts", "_jobs_clients", "_jobs_counts", "_jobs_groups", "_jobs_limits", "_jobs_metrics",
		"_jobs_migrations", "_jobs_queues", "_jobs_schedules", "_jobs_tags"}, tables)

	// A second table beside it is independent.
	other := sqlitedriver.New(db)
	require.NoError(t, other.Migrate(t.Context()))
	require.Empty(t, claim(t, other.Executor(), "c", 10))
}

// TestKeywordTable runs every operation on jobs tables named after SQL
// keywords, which are plain identifiers and so valid table names.
func TestKeywordTable(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"select", "order", "group", "table", "Index", "where"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d, db := newDriver(t, 0, sqlitedriver.WithTable(name))
			require.NoError(t, d.Migrate(t.Context()), "a second migration")
			require.Equal(t, name, d.Table())
			var objs string
			require.NoError(t, db.QueryRowContext(t.Context(), `SELECT group_concat(type || ' ' || name, ', ' ORDER BY name)
FROM sqlite_schema WHERE type IN ('table', 'index', 'trigger') AND name NOT LIKE 'sqlite%'`).Scan(&objs))
			require.Equal(t, fmt.Sprintf("table %[1]s, table %[1]s_acts, index %[1]s_acts_idx, index %[1]s_claim_idx, table %[1]s_clients, "+
				"trigger %[1]s_count_del, trigger %[1]s_count_ins, trigger %[1]s_count_upd, table %[1]s_counts, "+
				"index %[1]s_failed_idx, index %[1]s_finalized_idx, index %[1]s_group_idx, table %[1]s_groups, "+
				"index %[1]s_groups_at_idx, index %[1]s_key_idx, index %[1]s_key_run_idx, "+
				"index %[1]s_lease_idx, table %[1]s_limits, "+
				"table %[1]s_metrics, index %[1]s_metrics_minute_idx, "+
				"table %[1]s_migrations, table %[1]s_queues, index %[1]s_sched_due_idx, table %[1]s_schedules, "+
				"index %[1]s_seq_idx, table %[1]s_tags, "+
				"trigger %[1]s_tags_del, trigger %[1]s_tags_ins, trigger %[1]s_tags_upd, index %[1]s_unique_key_idx, "+
				"index %[1]s_unsettled_idx, "+
				"index %[1]s_waiting_idx", name), objs)
			var versions int
			require.NoError(t, db.QueryRowContext(t.Context(),
				`SELECT count(*) FROM "`+name+`_migrations"`).Scan(&versions))
			require.Equal(t, migrationFiles(t), versions)

			ex := d.Executor()
			jobs := []*driver.JobInsert{newJob(func(j *driver.JobInsert) { j.UniqueKey = "u" })}
			for range 5 { // enough to share columns in one statement
				jobs = append(jobs, newJob())
			}
			res := insert(t, ex, jobs...)
			require.True(t, insert(t, ex, newJob(func(j *driver.JobInsert) { j.UniqueKey = "u" }))[0].Duplicate)
			claimed := claim(t, ex, "c", 10)
			require.Len(t, claimed, len(jobs))
			get(t, ex, res[0].Job.ID)
			ctx := t.Context()
			n, err := ex.JobHeartbeat(ctx, &driver.JobHeartbeatParams{ClientID: "c", LockedUntil: base.Add(time.Second)})
			require.NoError(t, err)
			require.Equal(t, len(jobs), n)
			ok, err := ex.JobFinalize(ctx, &driver.JobFinalizeParams{Jobs: []*driver.JobFinalize{{
				ID: claimed[0].ID, Attempt: claimed[0].Attempt, LockedBy: "c", AttemptedAt: claimed[0].AttemptedAt,
				Status: driver.StatusCompleted, FinalizedAt: base,
			}}})
			require.NoError(t, err)
			require.Equal(t, []bool{true}, ok)
			rescued, err := ex.JobRescue(ctx, &driver.JobRescueParams{Now: base.Add(time.Hour), Limit: 10})
			require.NoError(t, err)
			require.Len(t, rescued, len(jobs)-1)

			// The operations API names the table and its client records too.
			list, err := ex.JobList(ctx, &driver.JobListParams{Limit: 100})
			require.NoError(t, err)
			require.Len(t, list.Jobs, len(jobs))
			stats, err := ex.JobStats(ctx, &driver.JobStatsParams{Since: base.Add(-time.Hour)})
			require.NoError(t, err)
			require.NotNil(t, stats)
			cancelled, err := ex.JobCancel(ctx, &driver.JobActParams{IDs: []string{rescued[0].ID}, Now: base})
			require.NoError(t, err)
			require.Len(t, cancelled, 1)
			_, err = ex.JobClean(ctx, &driver.JobCleanParams{Status: driver.StatusCompleted, Before: base.Add(time.Hour), Limit: 10})
			require.NoError(t, err)
			require.NoError(t, ex.ClientRecord(ctx, &driver.ClientRecordParams{Client: driver.ClientRow{ID: "c", StartedAt: base, SeenAt: base}}))
			clients, err := ex.ClientList(ctx, &driver.ClientListParams{})
			require.NoError(t, err)
			require.Len(t, clients, 1)
		})
	}
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

// TestClientRecordWithoutWorkerCounts lists a client record written as
// clients did before they recorded their worker counts.
func TestClientRecordWithoutWorkerCounts(t *testing.T) {
	t.Parallel()
	d, db := newDriver(t, 0)
	_, err := db.ExecContext(t.Context(), `INSERT INTO sluice_jobs_clients
	(id, host, pid, topics, queues, started_at, seen_at) VALUES ('old', 'h', 1, '["t"]', '["default"]', 1, 2)`)
	require.NoError(t, err)
	clients, err := d.Executor().ClientList(t.Context(), &driver.ClientListParams{})
	require.NoError(t, err)
	require.Len(t, clients, 1)
	require.Equal(t, []string{"default"}, clients[0].Queues)
	require.Nil(t, clients[0].MaxWorkers)
}
