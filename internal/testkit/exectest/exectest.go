// Package exectest gives the tests of the client's machinery (fetcher,
// completer, lease) real databases to drive through [driver.Executor]: a
// migrated SQLite file, and a migrated Postgres schema when dbtest finds a
// server. It inserts and claims jobs, reads them back, and can make the job
// table refuse updates for a while, to stand for a database that is failing.
// It also runs a test's background loops and keeps what a logger writes.
//
// It is for tests only.
package exectest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/pgxdriver"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/internal/testkit/dbtest"
)

// The jobs a DB inserts.
const (
	// Topic is the topic of the jobs a DB inserts.
	Topic = "work"
	// Queue is the queue of the jobs a DB inserts.
	Queue = "default"
)

// DB is one test's database.
type DB struct {
	// Exec runs operations on the database's own handle.
	Exec driver.Executor

	t        testing.TB
	table    string // quoted as SQL needs it
	postgres bool
	exec     func(ctx context.Context, sql string) error
	refusals atomic.Int64 // names the triggers RefuseUpdates creates
}

// Each runs test once per database, as parallel subtests named after it:
// on SQLite always, on Postgres unless dbtest skips it (see dbtest.URL).
func Each(t *testing.T, test func(t *testing.T, db *DB)) {
	t.Helper()
	for _, db := range []struct {
		name string
		open func(testing.TB) *DB
	}{{"sqlite", SQLite}, {"postgres", Postgres}} {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel()
			test(t, db.open(t))
		})
	}
}

// SQLite returns a migrated SQLite database in a file of t's, closed when
// t ends.
func SQLite(t testing.TB) *DB {
	t.Helper()
	db, err := sqlitedriver.Open(filepath.Join(t.TempDir(), "jobs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	d := sqlitedriver.New(db)
	require.NoError(t, d.Migrate(context.Background()))
	return &DB{
		Exec: d.Executor(), t: t, table: d.Table(),
		exec: func(ctx context.Context, sql string) error {
			_, err := db.ExecContext(ctx, sql)
			return err
		},
	}
}

// Postgres returns a migrated Postgres schema of t's (see dbtest.Pool), or
// skips t when there is no server.
func Postgres(t testing.TB) *DB {
	t.Helper()
	pool, schema := dbtest.Pool(t)
	d := pgxdriver.New(pool, pgxdriver.WithSchema(schema))
	require.NoError(t, d.Migrate(context.Background()))
	return &DB{
		Exec: d.Executor(), t: t, table: d.Table(), postgres: true,
		exec: func(ctx context.Context, sql string) error {
			_, err := pool.Exec(ctx, sql)
			return err
		},
	}
}

// Now returns the current time as the databases store it: in UTC, to the
// microsecond.
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// Job returns a job of Topic in Queue, due at runAt, with maxRetries
// retries and a new ID.
func Job(runAt time.Time, maxRetries int) *driver.JobInsert {
	return &driver.JobInsert{
		ID:         uuid.Must(uuid.NewV7()).String(),
		Topic:      Topic,
		Queue:      Queue,
		Payload:    []byte(`{}`),
		MaxRetries: maxRetries,
		RunAt:      runAt,
		CreatedAt:  runAt,
	}
}

// Insert inserts n jobs due at runAt with maxRetries retries, and returns
// them.
func (db *DB) Insert(n int, runAt time.Time, maxRetries int) []*driver.JobRow {
	db.t.Helper()
	jobs := make([]*driver.JobInsert, n)
	for i := range jobs {
		jobs[i] = Job(runAt, maxRetries)
	}
	res, err := db.Exec.JobInsertMany(context.Background(), &driver.JobInsertManyParams{Jobs: jobs})
	require.NoError(db.t, err)
	rows := make([]*driver.JobRow, len(res))
	for i, r := range res {
		rows[i] = r.Job
	}
	return rows
}

// Claim inserts n jobs due at now with maxRetries retries, and claims them
// at now for clientID with leases until lockedUntil. It returns them as
// claimed.
func (db *DB) Claim(n int, clientID string, now, lockedUntil time.Time, maxRetries int) []*driver.JobRow {
	db.t.Helper()
	db.Insert(n, now, maxRetries)
	rows, err := db.Exec.JobClaim(context.Background(), &driver.JobClaimParams{
		ClientID: clientID, Queue: Queue, Topics: []string{Topic}, Limit: n, Now: now, LockedUntil: lockedUntil,
	})
	require.NoError(db.t, err)
	require.Len(db.t, rows, n, "claimed")
	return rows
}

// Get returns the job with the given ID as it is stored.
func (db *DB) Get(id string) *driver.JobRow {
	db.t.Helper()
	row, err := db.Exec.JobGet(context.Background(), &driver.JobGetParams{ID: id})
	require.NoError(db.t, err)
	return row
}

// RefuseUpdates makes every update of the given jobs (of all jobs, when no
// ID is given) fail until the returned function is called, or the test
// ends. It stands for a database that is down or refusing writes.
func (db *DB) RefuseUpdates(ids ...string) (restore func()) {
	db.t.Helper()
	name := fmt.Sprintf("exectest_refuse_%d", db.refusals.Add(1))
	var create, drop string
	if db.postgres {
		when := ""
		if len(ids) > 0 {
			when = "WHEN (OLD.id::text IN (" + quoted(ids) + "))"
		}
		create = fmt.Sprintf(`CREATE FUNCTION %[1]s() RETURNS trigger LANGUAGE plpgsql AS
				$$ BEGIN RAISE EXCEPTION 'exectest: updates refused'; END $$;
			CREATE TRIGGER %[1]s BEFORE UPDATE ON %[2]s FOR EACH ROW %[3]s EXECUTE FUNCTION %[1]s()`,
			name, db.table, when)
		drop = fmt.Sprintf("DROP TRIGGER %[1]s ON %[2]s; DROP FUNCTION %[1]s()", name, db.table)
	} else {
		when := ""
		if len(ids) > 0 {
			when = "WHEN OLD.id IN (" + quoted(ids) + ")"
		}
		create = fmt.Sprintf(`CREATE TRIGGER %s BEFORE UPDATE ON %s %s
			BEGIN SELECT RAISE(ABORT, 'exectest: updates refused'); END`, name, db.table, when)
		drop = "DROP TRIGGER " + name
	}
	require.NoError(db.t, db.exec(context.Background(), create), "refuse updates")
	var restored atomic.Bool
	restore = func() {
		if restored.CompareAndSwap(false, true) {
			require.NoError(db.t, db.exec(context.Background(), drop), "restore updates")
		}
	}
	db.t.Cleanup(restore)
	return restore
}

// quoted returns ids as a list of SQL string literals.
func quoted(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = "'" + strings.ReplaceAll(id, "'", "''") + "'"
	}
	return strings.Join(q, ", ")
}

// Background runs fn in a goroutine of its own with a context that ends
// when stop is called or the test ends; stop then waits for fn to return,
// and fails the test if it does not within a few seconds.
func Background(t testing.TB, fn func(ctx context.Context)) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(ctx)
	}()
	stop = func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("exectest: a background loop did not return after its context ended")
		}
	}
	t.Cleanup(stop)
	return stop
}

// Logs is a logger's output, kept for tests that check what was logged.
type Logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Logger returns a logger that writes to a new Logs at every level, and
// the Logs.
func Logger() (*slog.Logger, *Logs) {
	l := &Logs{}
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug})), l
}

// Write appends p to the logs.
func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// Count returns how many logged lines contain every one of parts.
func (l *Logs) Count(parts ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for line := range strings.Lines(l.buf.String()) {
		if containsAll(line, parts) {
			n++
		}
	}
	return n
}

// containsAll reports whether s contains every one of parts.
func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
