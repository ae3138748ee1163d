package main

import (
	"testing"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/bench/internal/childtest"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// TestSystem runs every measurement, tiny, against real SQLite files.
func TestSystem(t *testing.T) {
	t.Parallel()
	childtest.Exercise(t, factories)
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
