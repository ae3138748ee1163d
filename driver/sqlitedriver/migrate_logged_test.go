package sqlitedriver

import (
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver/internal/migration"
)

// TestMigrationCountsLogsLoggedBefore: on a database migrated up to the
// migration that adds the count of records logged, with jobs that logged,
// Migrate gives them theirs and leaves the others without.
func TestMigrationCountsLogsLoggedBefore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ms, err := loadMigrations()
	require.NoError(t, err)
	at := slices.IndexFunc(ms, func(m migration.Migration) bool { return m.Name == "0009_logged.sql" })
	require.Positive(t, at)
	db, err := Open(filepath.Join(t.TempDir(), "before.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	applyMigrations(t, db, ms[:at], migrationReplacer(DefaultTable))
	for id, logs := range map[string]any{
		"0190f5d2-0000-7000-8000-000000000001": `{"records": [{"msg": "a"}, {"msg": "b"}], "dropped": 3}`,
		"0190f5d2-0000-7000-8000-000000000002": nil,
	} {
		_, err = db.ExecContext(ctx, `INSERT INTO sluice_jobs (id, topic, queue, priority, payload, status, attempt,
			max_retries, run_at, created_at, logs) VALUES (?, 't', 'default', 0, '{}', 'pending', 0, 3, 1, 1, ?)`, id, logs)
		require.NoError(t, err)
	}
	require.NoError(t, New(db).Migrate(ctx))
	for id, want := range map[string]sql.NullInt64{
		"0190f5d2-0000-7000-8000-000000000001": {Int64: 5, Valid: true},
		"0190f5d2-0000-7000-8000-000000000002": {},
	} {
		var got sql.NullInt64
		require.NoError(t, db.QueryRowContext(ctx, `SELECT logged FROM sluice_jobs WHERE id = ?`, id).Scan(&got))
		require.Equal(t, want, got, id)
	}
}

// applyMigrations applies ms to db, their placeholders filled by r, and
// records them as Migrate does (applied at 1), as an older version of the
// driver would have left the database.
func applyMigrations(t *testing.T, db *sql.DB, ms []migration.Migration, r *strings.Replacer) {
	t.Helper()
	ctx := t.Context()
	_, err := db.ExecContext(ctx, `CREATE TABLE sluice_jobs_migrations (
	version    INTEGER NOT NULL PRIMARY KEY,
	applied_at INTEGER NOT NULL
)`)
	require.NoError(t, err)
	for _, m := range ms {
		_, err = db.ExecContext(ctx, r.Replace(m.SQL))
		require.NoError(t, err, m.Name)
		_, err = db.ExecContext(ctx, `INSERT INTO sluice_jobs_migrations (version, applied_at) VALUES (?, 1)`, m.Version)
		require.NoError(t, err)
	}
}
