package faults_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver/pgxdriver"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// Bad input to the drivers' options, fuzzed: a name either works or is
// refused with an error naming the option, before anything is written.

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// FuzzSQLiteDSN opens a database through DSN at an arbitrary file name: the
// file is created at exactly that path, with nothing else beside it but its
// WAL and shared-memory files.
func FuzzSQLiteDSN(f *testing.F) {
	for _, s := range []string{"jobs.db", "a?b.db", "a#b", "100%.db", "%3f", "x?mode=memory", "sp ace", "é.db", "file:x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") || len(name) > 200 {
			return
		}
		dir := t.TempDir()
		path := filepath.Join(dir, name)
		db, err := sql.Open("sqlite", sqlitedriver.DSN(path))
		require.NoError(t, err)
		defer db.Close()
		_, err = db.Exec(`CREATE TABLE t (x INTEGER)`)
		require.NoError(t, err, "DSN(%q) = %q", path, sqlitedriver.DSN(path))
		var mode string
		require.NoError(t, db.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
		require.Equal(t, "wal", mode)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range entries {
			require.Contains(t, []string{name, name + "-wal", name + "-shm"}, e.Name(), "DSN(%q)", path)
		}
		_, err = os.Stat(path)
		require.NoError(t, err)
	})
}

// FuzzSQLiteWithTable migrates with an arbitrary table name: anything but
// a plain identifier is an error naming WithTable, and a failed migration
// creates nothing. A plain identifier migrates, SQL keywords included,
// unless SQLite reserves it for itself (it starts with "sqlite_").
func FuzzSQLiteWithTable(f *testing.F) {
	for _, s := range []string{"sluice_jobs", "jobs", "select", "order", "Table", "sqlite_jobs", "a b", "1abc", "_", "x;DROP TABLE y", "Ünï", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		d, db := memoryDriver(t, name)
		err := d.Migrate(t.Context())
		tables := sqliteTables(t, db)
		if !identRE.MatchString(name) {
			require.ErrorContains(t, err, "WithTable")
			require.Empty(t, tables)
			return
		}
		if strings.HasPrefix(strings.ToLower(name), "sqlite_") {
			require.Error(t, err)
			require.Empty(t, tables, "a failed migration left tables behind")
			return
		}
		require.NoError(t, err)
		require.Equal(t, name, d.Table())
		require.Contains(t, tables, name)
	})
}

// memoryDriver returns a SQLite driver over a fresh in-memory database, with
// the jobs table named name.
func memoryDriver(t *testing.T, name string) (*sqlitedriver.Driver, *sql.DB) {
	t.Helper()
	db, err := sql.Open("sqlite", "file::memory:")
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(1)
	return sqlitedriver.New(db, sqlitedriver.WithTable(name)), db
}

// sqliteTables lists the database's tables.
func sqliteTables(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
	require.NoError(t, err)
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		names = append(names, n)
	}
	require.NoError(t, rows.Err())
	return names
}

// FuzzPostgresNames configures the Postgres driver with arbitrary schema
// and table names: invalid ones make Migrate fail with an error naming the
// option before it touches the server (none answers here); valid ones are
// quoted, and give a notification channel within Postgres's 63 bytes.
func FuzzPostgresNames(f *testing.F) {
	f.Add("public", "sluice_jobs")
	f.Add("select", "from")
	f.Add("a b", "t")
	f.Add(strings.Repeat("s", 63), strings.Repeat("t", 48))
	f.Add(strings.Repeat("s", 64), strings.Repeat("t", 49))
	f.Add("s", `x"; DROP TABLE y; --`)
	pool, err := pgxpool.New(context.Background(), "postgres://postgres@127.0.0.1:1/none?connect_timeout=1")
	require.NoError(f, err)
	f.Cleanup(pool.Close)
	f.Fuzz(func(t *testing.T, schema, table string) {
		d := pgxdriver.New(pool, pgxdriver.WithSchema(schema), pgxdriver.WithTable(table))
		schemaOK := identRE.MatchString(schema) && len(schema) <= 63
		tableOK := identRE.MatchString(table) && len(table) <= 48
		if !schemaOK || !tableOK {
			err := d.Migrate(t.Context())
			require.Error(t, err)
			if !schemaOK {
				require.ErrorContains(t, err, "WithSchema")
			} else {
				require.ErrorContains(t, err, "WithTable")
			}
			return
		}
		require.Equal(t, pgx.Identifier{schema, table}.Sanitize(), d.Table())
		require.LessOrEqual(t, len(d.Channel()), 63)
	})
}
