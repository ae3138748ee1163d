package systems

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/internal/dbtest"
)

// TestSystems runs every measurement, tiny, for every system of this
// module against real databases: SQLite files and the Postgres server the
// tests are given.
func TestSystems(t *testing.T) {
	t.Parallel()
	for key := range Factories {
		system, driver, _ := strings.Cut(key, "/")
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			var fresh func(*harness.Spec) (func(), error)
			switch driver {
			case "sqlite":
				dir := t.TempDir()
				var n atomic.Int64
				fresh = func(spec *harness.Spec) (func(), error) {
					spec.DB = filepath.Join(dir, fmt.Sprintf("%d.db", n.Add(1)))
					return func() {}, nil
				}
			case "pg":
				url := dbtest.URL(t)
				fresh = func(spec *harness.Spec) (func(), error) {
					spec.DB, spec.Schema = url, dbtest.Schema(t, url)
					return func() {}, nil
				}
			}
			err := harness.Exercise(t.Context(), Factories, harness.Spec{System: system, Driver: driver}, fresh)
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSQLiteSettingsAreSluices checks that every system's SQLite database
// gets sqlitedriver's settings.
func TestSQLiteSettingsAreSluices(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"/tmp/a.db", "x?y#z%.db"} {
		if got, want := harness.SQLiteDSN(path), sqlitedriver.DSN(path); got != want {
			t.Errorf("SQLiteDSN(%q) = %q, sqlitedriver.DSN = %q", path, got, want)
		}
	}
}
