package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func TestMigrate(t *testing.T) {
	t.Parallel()
	eachDB(t, false, func(t *testing.T, d *db) {
		if d.name == "sqlite" {
			// A file that does not exist is not created by a mistyped path.
			d.run(t, "migrate", "status").fails(t, 1, "does not exist")
			d.run(t, "list").fails(t, 1, "does not exist")
			_, err := os.Stat(d.flags[1])
			require.ErrorIs(t, err, os.ErrNotExist)
		} else {
			before := decode[[]driver.MigrationState](t, d.run(t, "migrate", "status", "--json").ok(t))
			require.NotEmpty(t, before)
			for _, m := range before {
				require.False(t, m.Applied(), m.Name)
			}
			d.run(t, "migrate", "status", "--check").fails(t, 1, "pending")
			d.run(t, "list").fails(t, 1, "sluice migrate up")
		}

		up := decode[struct {
			Applied []driver.MigrationState `json:"applied"`
			Version int                     `json:"version"`
		}](t, d.run(t, "migrate", "up", "--json").ok(t))
		require.NotEmpty(t, up.Applied)
		require.Equal(t, up.Applied[len(up.Applied)-1].Version, up.Version)

		status := decode[[]driver.MigrationState](t, d.run(t, "migrate", "status", "--json").ok(t))
		require.Len(t, status, len(up.Applied))
		for _, m := range status {
			require.True(t, m.Applied(), m.Name)
		}
		d.run(t, "migrate", "status", "--check").ok(t)
		require.Contains(t, d.run(t, "migrate", "status").ok(t), "0 pending")

		again := decode[struct {
			Applied []driver.MigrationState `json:"applied"`
		}](t, d.run(t, "migrate", "up", "--json").ok(t))
		require.Empty(t, again.Applied, "migrate up is idempotent")

		out := d.run(t, "list", "--json").ok(t)
		require.Contains(t, out, `"items": []`)
		require.Zero(t, decode[listOut](t, out).Total)
	})
}

func TestMigrateSQL(t *testing.T) {
	t.Parallel()
	eachDB(t, true, func(t *testing.T, d *db) {
		out := d.run(t, "migrate", "sql").ok(t)
		require.Contains(t, out, "-- sluice migration 0001_create_jobs.sql")
		require.Contains(t, out, "CREATE TABLE")
		require.NotContains(t, out, "{t")

		for format, want := range map[string]string{
			"plain":          "0001_create_jobs.sql",
			"goose":          "0001_create_jobs.sql",
			"golang-migrate": "0001_create_jobs.up.sql",
		} {
			dir := t.TempDir()
			d.run(t, "migrate", "sql", "--dir", dir, "--format", format).ok(t)
			b, err := os.ReadFile(filepath.Join(dir, want))
			require.NoError(t, err, format)
			require.Contains(t, string(b), "CREATE TABLE", format)
			if format == "goose" {
				require.True(t, strings.HasPrefix(string(b), "-- +goose Up\n-- +goose StatementBegin\n"))
				require.True(t, strings.HasSuffix(string(b), "-- +goose StatementEnd\n"))
			}
		}
		d.run(t, "migrate", "sql", "--format", "flyway", "--dir", t.TempDir()).fails(t, 2, "--format")
		d.run(t, "migrate", "sql", "--format", "goose").fails(t, 2, "needs --dir")
		d.run(t, "migrate", "down").fails(t, 2, "unknown migrate verb")
		d.run(t, "migrate").fails(t, 2, "up, status or sql")
	})
}
