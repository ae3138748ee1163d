package sluicesqlite

import (
	"testing"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

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
