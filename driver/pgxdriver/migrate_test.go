package pgxdriver_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/pgxdriver"
	"github.com/sluicehq/sluice/internal/testkit/dbtest"
)

func TestMigrateIdempotent(t *testing.T) {
	t.Parallel()
	d, pool, schema := newDriver(t)
	ctx := t.Context()
	for range 3 {
		require.NoError(t, d.Migrate(ctx))
	}
	var versions int
	require.NoError(t, pool.QueryRow(ctx,
		`SELECT count(*) FROM `+schema+`.sluice_jobs_migrations`).Scan(&versions))
	ms, err := d.Migrations()
	require.NoError(t, err)
	require.Equal(t, len(ms), versions, "each migration recorded once")
}

func TestMigrateConcurrentNewSchema(t *testing.T) {
	t.Parallel()
	pool, schema := dbtest.Pool(t)
	ctx := t.Context()
	// A schema that does not exist yet: every migrator tries to create it.
	target := schema + "_q"
	t.Cleanup(func() {
		// Not t.Context(): it is cancelled before cleanups run.
		if _, err := pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+target+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", target, err)
		}
	})
	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = pgxdriver.New(pool, pgxdriver.WithSchema(target)).Migrate(ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "migrator %d", i)
	}
	d := pgxdriver.New(pool, pgxdriver.WithSchema(target))
	res, err := d.Executor().JobInsertMany(ctx, &driver.JobInsertManyParams{Jobs: []*driver.JobInsert{newJob("q")}})
	require.NoError(t, err)
	require.Len(t, res, 1)
}

func TestMigrationsPlainSQL(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.Pool(t)
	ms, err := pgxdriver.New(pool, pgxdriver.WithSchema("app"), pgxdriver.WithTable("jobs")).Migrations()
	require.NoError(t, err)
	require.NotEmpty(t, ms)
	all := ""
	for name, sql := range ms {
		require.NotContains(t, sql, "{t", "%s: placeholder left", name)
		require.Contains(t, sql, `"app"."jobs`, name)
		all += sql
	}
	require.Contains(t, all, `"app"."jobs" (`)
	require.Contains(t, all, `"app"."jobs_clients" (`)
	require.Contains(t, all, `"app"."jobs_counts" (`)
	require.Contains(t, all, `"app"."jobs_count_log" (`)
	for _, idx := range []string{"claim_idx", "lease_idx", "unique_key_idx", "status_idx", "finalized_idx", "failed_idx"} {
		require.Contains(t, all, `"jobs_`+idx+`"`)
	}
	for _, fn := range []string{"count_ins", "count_upd", "count_del", "count_trunc"} {
		require.Contains(t, all, `FUNCTION "app"."jobs_`+fn+`"()`)
		require.Contains(t, all, `TRIGGER "jobs_`+fn+`"`)
	}
	require.Contains(t, ms["0001_create_jobs.sql"], `"jobs_claim_idx"`)
	require.Contains(t, ms["0004_lease_index_by_lease.sql"], `DROP INDEX IF EXISTS "app"."jobs_lease_idx"`)
}

func TestInvalidNames(t *testing.T) {
	t.Parallel()
	pool, _ := dbtest.Pool(t)
	ctx := t.Context()
	for _, opt := range []pgxdriver.Option{
		pgxdriver.WithTable("jobs; DROP TABLE x"),
		pgxdriver.WithTable(""),
		pgxdriver.WithTable(strings.Repeat("a", 49)),
		pgxdriver.WithSchema("1abc"),
		pgxdriver.WithSchema(`a"b`),
	} {
		d := pgxdriver.New(pool, opt)
		require.ErrorContains(t, d.Migrate(ctx), "invalid")
		_, err := d.Executor().JobGet(ctx, &driver.JobGetParams{ID: "x"})
		require.ErrorContains(t, err, "invalid")
		_, err = d.Executor().JobClaim(ctx, &driver.JobClaimParams{Queue: "q", Topics: []string{"t"}, Limit: 1})
		require.ErrorContains(t, err, "invalid")
		_, err = d.Listen(ctx, func(driver.Notification) {})
		require.ErrorContains(t, err, "invalid")
	}
	require.ErrorContains(t, pgxdriver.New(nil).Migrate(ctx), "nil")
}

// TestClientRecordWithoutWorkerCounts lists a client record written as
// clients did before they recorded their worker counts.
func TestClientRecordWithoutWorkerCounts(t *testing.T) {
	t.Parallel()
	d, pool, schema := newDriver(t)
	_, err := pool.Exec(t.Context(), `INSERT INTO `+schema+`.sluice_jobs_clients
	(id, host, pid, topics, queues, started_at, seen_at) VALUES ('old', 'h', 1, '["t"]', '["default"]', now(), now())`)
	require.NoError(t, err)
	clients, err := d.Executor().ClientList(t.Context(), &driver.ClientListParams{})
	require.NoError(t, err)
	require.Len(t, clients, 1)
	require.Equal(t, []string{"default"}, clients[0].Queues)
	require.Nil(t, clients[0].MaxWorkers)
}

// TestMigrationStatus reports every migration pending in a schema never
// migrated, writes nothing doing so (not even the schema), and every one
// applied after Migrate; a version recorded by a newer release is reported
// too.
func TestMigrationStatus(t *testing.T) {
	t.Parallel()
	pool, schema := dbtest.Pool(t)
	ctx := t.Context()
	target := schema + "_st"
	t.Cleanup(func() {
		if _, err := pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+target+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", target, err)
		}
	})
	d := pgxdriver.New(pool, pgxdriver.WithSchema(target))
	files, err := d.Migrations()
	require.NoError(t, err)

	before, err := d.MigrationStatus(ctx)
	require.NoError(t, err)
	require.Len(t, before, len(files))
	for i, m := range before {
		// Versions ascend, each its file's number; some may be missing
		// (numbers kept for migrations of other branches).
		require.True(t, i == 0 || m.Version > before[i-1].Version, m.Name)
		require.True(t, strings.HasPrefix(m.Name, fmt.Sprintf("%04d_", m.Version)), m.Name)
		require.Contains(t, files, m.Name)
		require.False(t, m.Applied(), m.Name)
	}
	var exists bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)`, target).Scan(&exists))
	require.False(t, exists, "MigrationStatus writes nothing")

	require.NoError(t, d.Migrate(ctx))
	after, err := d.MigrationStatus(ctx)
	require.NoError(t, err)
	require.Len(t, after, len(before))
	for _, m := range after {
		require.True(t, m.Applied(), m.Name)
		require.Equal(t, "UTC", m.AppliedAt.Location().String())
	}

	_, err = pool.Exec(ctx, `INSERT INTO `+target+`.sluice_jobs_migrations (version, name, applied_at) VALUES (9999, 'x.sql', now())`)
	require.NoError(t, err)
	newer, err := d.MigrationStatus(ctx)
	require.NoError(t, err)
	last := newer[len(newer)-1]
	require.Equal(t, driver.MigrationState{Version: 9999, AppliedAt: last.AppliedAt}, last)

	var _ driver.MigrationReporter = d
	_, err = pgxdriver.New(pool, pgxdriver.WithTable("a b")).MigrationStatus(ctx)
	require.ErrorContains(t, err, "invalid")
}
