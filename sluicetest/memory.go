package sluicetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"testing"

	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// memoryConns is how many connections a memory database's handle keeps.
const memoryConns = 4

// OpenMemory returns a handle on a new SQLite database held in memory,
// private to the test, with the settings of sqlitedriver.Open; it is
// closed, and the database gone, when the test ends. Every connection of
// the handle sees the same database (SQLite's memdb VFS, which locks as a
// file does, so that concurrent writers wait for each other rather than
// fail as they would with a shared-cache memory database). Use it where a
// test needs the handle too, to begin transactions: sqlitedriver.New(db).
func OpenMemory(tb testing.TB) *sql.DB {
	tb.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	// A name starting with a slash shares the database among the
	// process's connections; it lives while one of them is open.
	dsn := sqlitedriver.DSN("/sluicetest-"+hex.EncodeToString(b[:])) + "&vfs=memdb"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		tb.Fatalf("sluicetest: open memory database: %v", err)
		return nil
	}
	// One connection is held for the test's life, so that the database
	// outlives the handle's idle connections.
	ctx := context.Background()
	keep, err := db.Conn(ctx)
	if err != nil {
		_ = db.Close()
		tb.Fatalf("sluicetest: open memory database: %v", err)
		return nil
	}
	db.SetMaxOpenConns(memoryConns + 1)
	db.SetMaxIdleConns(memoryConns + 1)
	tb.Cleanup(func() {
		_ = keep.Close()
		if err := db.Close(); err != nil {
			tb.Errorf("sluicetest: close memory database: %v", err)
		}
	})
	return db
}

// NewMemoryDriver returns a SQLite driver over a new in-memory database
// (see OpenMemory), migrated, for fast tests of code that uses sluice:
// each test gets a database of its own and nothing touches the disk.
func NewMemoryDriver(tb testing.TB, opts ...sqlitedriver.Option) *sqlitedriver.Driver {
	tb.Helper()
	d := sqlitedriver.New(OpenMemory(tb), opts...)
	if err := d.Migrate(context.Background()); err != nil {
		tb.Fatalf("sluicetest: migrate memory database: %v", err)
		return nil
	}
	return d
}
