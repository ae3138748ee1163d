package sqlitedriver

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

// TestMigrateBareSchema opens a database whose schema was written with
// bare (unquoted) names, as the driver wrote them before it quoted its
// identifiers: Migrate finds the tables and indexes it would create under
// the same names, applies nothing again and changes nothing, and the queue
// works on the old schema.
func TestMigrateBareSchema(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ms, err := loadMigrations()
	require.NoError(t, err)
	for _, m := range ms {
		require.NotContains(t, migrationReplacer(DefaultTable).Replace(m.SQL), "{", "%s: a placeholder is left", m.Name)
	}

	db, err := Open(filepath.Join(t.TempDir(), "bare.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	pairs := []string{"{t}", DefaultTable}
	for _, suffix := range indexSuffixes {
		pairs = append(pairs, "{t_"+suffix+"}", DefaultTable+"_"+suffix)
	}
	bare := strings.NewReplacer(pairs...)
	applyMigrations(t, db, ms, bare)
	const withSQL = `type || ' ' || name || ' ' || coalesce(sql, '')`
	before := schema(t, db, withSQL)

	d := New(db)
	for range 2 {
		require.NoError(t, d.Migrate(ctx))
	}
	require.Equal(t, before, schema(t, db, withSQL), "Migrate changed the schema")
	var versions, reapplied int
	require.NoError(t, db.QueryRowContext(ctx,
		`SELECT count(*), count(*) FILTER (WHERE applied_at <> 1) FROM sluice_jobs_migrations`).Scan(&versions, &reapplied))
	require.Equal(t, len(ms), versions)
	require.Zero(t, reapplied)

	fresh := newPlanDriver(t)
	const names = `type || ' ' || name`
	require.Equal(t, schema(t, db, names), schema(t, fresh.db, names),
		"a fresh schema has other names than the bare one")

	ex := d.Executor()
	now := time.Unix(1_900_000_000, 0)
	_, err = ex.JobInsertMany(ctx, &driver.JobInsertManyParams{Jobs: []*driver.JobInsert{{
		ID: "job-1", Topic: "email", Queue: "default", Payload: []byte("{}"),
		UniqueKey: "k", RunAt: now, CreatedAt: now,
	}}})
	require.NoError(t, err)
	claimed, err := ex.JobClaim(ctx, &driver.JobClaimParams{ClientID: "c", Queue: "default",
		Topics: []string{"email"}, Limit: 10, Now: now, LockedUntil: now.Add(time.Minute)})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
}

// schema returns expr for each of the database's tables and indexes, one
// a line, in order of name.
func schema(t *testing.T, db *sql.DB, expr string) string {
	t.Helper()
	var s string
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT group_concat(`+expr+`, char(10) ORDER BY name)
FROM sqlite_schema WHERE type IN ('table', 'index')`).Scan(&s))
	return s
}
