package sqlitedriver_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// TestMigrationStatus reports every migration pending on a new file,
// writes nothing doing so, and every one applied after Migrate; a version
// recorded by a newer release is reported too.
func TestMigrationStatus(t *testing.T) {
	t.Parallel()
	db, _ := openDB(t, 0)
	d := sqlitedriver.New(db, sqlitedriver.WithTable("q"))
	ctx := t.Context()

	before, err := d.MigrationStatus(ctx)
	require.NoError(t, err)
	require.Len(t, before, migrationFiles(t))
	for i, m := range before {
		// Versions ascend, each its file's number; some may be missing
		// (numbers kept for migrations of other branches).
		require.True(t, i == 0 || m.Version > before[i-1].Version, m.Name)
		require.True(t, strings.HasPrefix(m.Name, fmt.Sprintf("%04d_", m.Version)), m.Name)
		require.True(t, strings.HasSuffix(m.Name, ".sql"), m.Name)
		require.False(t, m.Applied(), m.Name)
	}
	var tables int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&tables))
	require.Zero(t, tables, "MigrationStatus writes nothing")

	require.NoError(t, d.Migrate(ctx))
	after, err := d.MigrationStatus(ctx)
	require.NoError(t, err)
	require.Len(t, after, len(before))
	for _, m := range after {
		require.True(t, m.Applied(), m.Name)
		require.Equal(t, "UTC", m.AppliedAt.Location().String())
	}

	_, err = db.ExecContext(ctx, `INSERT INTO q_migrations (version, applied_at) VALUES (9999, 1)`)
	require.NoError(t, err)
	newer, err := d.MigrationStatus(ctx)
	require.NoError(t, err)
	last := newer[len(newer)-1]
	require.Equal(t, driver.MigrationState{Version: 9999, AppliedAt: last.AppliedAt}, last)
	require.True(t, last.Applied())

	var _ driver.MigrationReporter = d
}

// TestMigrationsSQL returns each migration's SQL with the table's names
// filled in, and the SQL migrates a fresh file as Migrate would.
func TestMigrationsSQL(t *testing.T) {
	t.Parallel()
	db, _ := openDB(t, 0)
	d := sqlitedriver.New(db, sqlitedriver.WithTable("app_jobs"))
	ms, err := d.Migrations()
	require.NoError(t, err)
	require.Len(t, ms, migrationFiles(t))
	for _, name := range slices.Sorted(maps.Keys(ms)) { // names sort in version order
		sql := ms[name]
		require.NotContains(t, sql, "{t", "%s: placeholder left", name)
		_, err := db.ExecContext(t.Context(), sql)
		require.NoError(t, err, name)
	}
	require.Contains(t, ms["0001_create_jobs.sql"], `"app_jobs"`)
	// The schema the SQL made serves the driver.
	insert(t, d.Executor(), newJob())
	require.Len(t, claim(t, d.Executor(), "c", 10), 1)

	_, err = sqlitedriver.New(db, sqlitedriver.WithTable("no such; table")).Migrations()
	require.Error(t, err)
}
