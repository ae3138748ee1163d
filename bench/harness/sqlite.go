package harness

import "strings"

// SQLiteSettings are the connection settings every system's SQLite database
// is opened with (modernc.org/sqlite's DSN parameters): WAL journal,
// synchronous=NORMAL, a 10 s busy timeout, foreign keys on, and
// transactions that take the write lock when they begin. They are
// sqlitedriver's own; the comparison checks that they still are.
const SQLiteSettings = "_pragma=busy_timeout(10000)" +
	"&_pragma=journal_mode(WAL)" +
	"&_pragma=synchronous(NORMAL)" +
	"&_pragma=foreign_keys(1)" +
	"&_txlock=immediate"

// SQLiteDSN returns the modernc.org/sqlite data source name for the file at
// path with SQLiteSettings.
func SQLiteDSN(path string) string {
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	return "file:" + r.Replace(path) + "?" + SQLiteSettings
}
