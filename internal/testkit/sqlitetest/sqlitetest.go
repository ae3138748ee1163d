// Package sqlitetest gives tests new SQLite database files with sluice's
// schema already in place. Migrating a new file takes half a second under
// the race detector (SQLite's engine is Go code, and every memory access
// of it is checked), which a test suite that opens a file per test pays
// hundreds of times; a copy of a file migrated once per test process
// costs a millisecond.
package sqlitetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// migrated is the content of a database file with the default jobs table
// migrated, made once per process.
var migrated = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "sluice-sqlitetest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "migrated.db")
	db, err := sqlitedriver.Open(path)
	if err != nil {
		return nil, err
	}
	if err := sqlitedriver.New(db).Migrate(context.Background()); err != nil {
		db.Close()
		return nil, err
	}
	// Closing the last connection checkpoints the write-ahead log into
	// the file and removes the log, so the file alone holds everything.
	if err := db.Close(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		return nil, fmt.Errorf("sqlitetest: the write-ahead log of %s outlived its database", path)
	}
	return os.ReadFile(path)
})

// Path returns the path of a new database file, in a temporary directory
// of tb's, whose default jobs table (sluice_jobs) has every migration
// applied, as Driver.Migrate leaves a new file.
func Path(tb testing.TB) string {
	tb.Helper()
	content, err := migrated()
	if err != nil {
		tb.Fatalf("sqlitetest: migrating a database to copy: %v", err)
	}
	path := filepath.Join(tb.TempDir(), "jobs.db")
	if err := os.WriteFile(path, content, 0o600); err != nil {
		tb.Fatalf("sqlitetest: %v", err)
	}
	return path
}
