package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"strings"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// BusyTimeout is the busy timeout [DSN] sets, in milliseconds: how long a
// connection waits for another one's write lock before failing with
// SQLITE_BUSY.
const BusyTimeout = 10000

// dsnParams are the connection settings DSN adds; see the package
// documentation for why each matters. The busy timeout is BusyTimeout.
const dsnParams = "_pragma=busy_timeout(10000)" +
	"&_pragma=journal_mode(WAL)" +
	"&_pragma=synchronous(NORMAL)" +
	"&_pragma=foreign_keys(1)" +
	"&_txlock=immediate"

// poolSize returns the number of connections Open keeps: one per processor
// (at least two), all of them kept idle when unused. Measured with eight
// goroutines reading and writing through a driver on two cores, two
// connections served 1.4 times the operations of three or four, and letting
// idle connections close (database/sql keeps two by default) halved the
// throughput: every new connection opens the file, applies the pragmas and
// prepares its statements again.
func poolSize() int { return max(2, runtime.GOMAXPROCS(0)) }

// DSN returns the modernc.org/sqlite data source name for the database file
// at path with the settings a queue needs: WAL journal, synchronous=NORMAL,
// a busy timeout of [BusyTimeout] milliseconds, foreign keys on, and
// transactions that take the write lock when they begin (_txlock=immediate).
// path is a file system path, not a URI. Use the result to open a handle
// yourself with sql.Open("sqlite", DSN(path)); [Open] uses it too.
func DSN(path string) string {
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	return "file:" + r.Replace(path) + "?" + dsnParams
}

// Open opens the SQLite database file at path (creating it if needed) with
// [DSN] and checks that it can be used. The handle keeps one connection per
// processor (GOMAXPROCS, at least two), and keeps them open when idle, since
// a new connection must apply the pragmas and prepare its statements again.
// An application that holds transactions open for long may raise the limit
// with SetMaxOpenConns, and should then raise SetMaxIdleConns to match.
func Open(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", DSN(path))
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: open %s: %w", path, err)
	}
	n := poolSize()
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	if err := db.PingContext(context.Background()); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sqlitedriver: open %s: %w", path, err)
	}
	return db, nil
}
