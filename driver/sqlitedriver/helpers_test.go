package sqlitedriver_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/internal/testkit/sqlitetest"
)

// openDB opens a fresh database file in a temporary directory with Open and
// closes it when the test ends. maxConns, when positive, limits the pool.
func openDB(tb testing.TB, maxConns int) (*sql.DB, string) {
	tb.Helper()
	return openDBAt(tb, filepath.Join(tb.TempDir(), "queue.db"), maxConns)
}

// openDBAt is openDB for the file at path.
func openDBAt(tb testing.TB, path string, maxConns int) (*sql.DB, string) {
	tb.Helper()
	db, err := sqlitedriver.Open(path)
	require.NoError(tb, err)
	if maxConns > 0 {
		db.SetMaxOpenConns(maxConns)
	}
	tb.Cleanup(func() { require.NoError(tb, db.Close()) })
	return db, path
}

// newDriver returns a migrated driver over a fresh database: with no
// options, a copy of one migrated before (sqlitetest.Path), on which
// Migrate finds nothing to do.
func newDriver(tb testing.TB, maxConns int, opts ...sqlitedriver.Option) (*sqlitedriver.Driver, *sql.DB) {
	tb.Helper()
	var db *sql.DB
	if len(opts) == 0 {
		db, _ = openDBAt(tb, sqlitetest.Path(tb), maxConns)
	} else {
		db, _ = openDB(tb, maxConns)
	}
	d := sqlitedriver.New(db, opts...)
	require.NoError(tb, d.Migrate(context.Background()))
	return d, db
}

// newDriverPath is newDriver with the default pool, also returning the
// database file's path.
func newDriverPath(tb testing.TB) (*sqlitedriver.Driver, *sql.DB, string) {
	tb.Helper()
	db, path := openDBAt(tb, sqlitetest.Path(tb), 0)
	d := sqlitedriver.New(db)
	require.NoError(tb, d.Migrate(context.Background()))
	return d, db, path
}

var idSeq atomic.Int64

// newID returns an ID that sorts after every ID returned before it.
func newID() string {
	return fmt.Sprintf("job-%012d", idSeq.Add(1))
}

// base is a fixed time with microseconds, the tests' clock.
var base = time.Date(2030, 1, 2, 3, 4, 5, 123456000, time.UTC)

// newJob returns a job ready to insert in queue "default", topic "email".
func newJob(mod ...func(*driver.JobInsert)) *driver.JobInsert {
	j := &driver.JobInsert{
		ID:         newID(),
		Topic:      "email",
		Queue:      "default",
		Payload:    []byte(`{"to":"a@b.c"}`),
		MaxRetries: 3,
		RunAt:      base,
		CreatedAt:  base,
	}
	for _, m := range mod {
		m(j)
	}
	return j
}

// insert inserts jobs through ex and returns the results.
func insert(tb testing.TB, ex driver.Executor, jobs ...*driver.JobInsert) []driver.JobInsertResult {
	tb.Helper()
	res, err := ex.JobInsertMany(context.Background(), &driver.JobInsertManyParams{Jobs: jobs})
	require.NoError(tb, err)
	require.Len(tb, res, len(jobs))
	return res
}

// claim claims up to limit jobs of queue "default", topic "email", as client.
func claim(tb testing.TB, ex driver.Executor, client string, limit int) []*driver.JobRow {
	tb.Helper()
	jobs, err := ex.JobClaim(context.Background(), &driver.JobClaimParams{
		ClientID:    client,
		Queue:       "default",
		Topics:      []string{"email"},
		Limit:       limit,
		Now:         base,
		LockedUntil: base.Add(time.Minute),
	})
	require.NoError(tb, err)
	return jobs
}

// newDriverOn returns a driver over db with the default table.
func newDriverOn(db *sql.DB) *sqlitedriver.Driver { return sqlitedriver.New(db) }
