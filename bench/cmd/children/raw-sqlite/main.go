// Command raw-sqlite is the comparison's ceiling on SQLite, the systems
// raw and raw-delete (see internal/rawsys): batched claims and completions
// in plain SQL through modernc.org/sqlite with the settings every system
// gets, with no queue logic. It links modernc.org/sqlite and no system.
package main

import (
	"context"
	"database/sql"
	"os"
	"runtime"
	"strings"

	_ "modernc.org/sqlite"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/bench/internal/rawsys"
	"github.com/sluicehq/sluice/bench/internal/sqldb"
)

// tuned are the ceiling's settings on SQLite, the best of a sweep
// (cmd/rawsweep; see bench/README.md). SQLite has one writer at a time, so
// a second connection only overlaps decoding with the other's writes, and
// a batch of 1,000 pays a commit for more jobs.
var tuned = rawsys.Settings{Batch: 1000, Conns: 1}

var factories = rawsys.Factories("sqlite", tuned, open)

func main() {
	harness.Exit(harness.ChildMain(context.Background(), os.Args[1:], os.Stdout, factories))
}

// schema is the jobs table and the index of pending jobs a claim reads.
const schema = `CREATE TABLE jobs (
		id INTEGER PRIMARY KEY,
		state TEXT NOT NULL DEFAULT 'pending',
		args BLOB NOT NULL
	);
	CREATE INDEX jobs_pending ON jobs (id) WHERE state = 'pending'`

// claimSQL takes the oldest pending jobs; the transaction it runs in holds
// the write lock from its start (_txlock=immediate), so no other
// connection claims them too.
const claimSQL = `UPDATE jobs SET state = 'running'
	WHERE id IN (SELECT id FROM jobs WHERE state = 'pending' ORDER BY id LIMIT ?)
	RETURNING id, args`

type db struct {
	db       *sql.DB
	sessions int // connections held by workers
}

// open opens spec's file with the settings every system gets and
// sqlitedriver.Open's pool, one connection per processor and at least two.
func open(_ context.Context, spec *harness.Spec) (rawsys.DB, error) {
	h, err := sql.Open("sqlite", harness.SQLiteDSN(spec.DB))
	if err != nil {
		return nil, err
	}
	setPool(h, 0)
	return &db{db: h}, nil
}

// setPool sizes h's pool as sqlitedriver.Open does, and to at least n
// connections.
func setPool(h *sql.DB, n int) {
	n = max(runtime.GOMAXPROCS(0), 2, n)
	h.SetMaxOpenConns(n)
	h.SetMaxIdleConns(n)
}

func (d *db) Migrate(ctx context.Context) error { return sqldb.Exec(d.db)(ctx, schema) }

func (d *db) InsertFinished(ctx context.Context, n int) error {
	return sqldb.Exec(d.db)(ctx, `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?)
		INSERT INTO jobs (state, args) SELECT 'completed', CAST(json_object('n', -n) AS BLOB) FROM g`, n)
}

func (d *db) Insert(ctx context.Context, args []byte) error {
	return sqldb.Exec(d.db)(ctx, `INSERT INTO jobs (args) VALUES (?)`, args)
}

// InsertMany inserts the jobs with one multi-row INSERT.
func (d *db) InsertMany(ctx context.Context, args [][]byte) error {
	values := make([]any, len(args))
	for i, a := range args {
		values[i] = a
	}
	return sqldb.Exec(d.db)(ctx, `INSERT INTO jobs (args) VALUES `+list("(?)", len(args)), values...)
}

func (d *db) Count(ctx context.Context, query string) (int64, error) {
	return sqldb.Count(d.db)(ctx, query)
}

// Session takes a connection of the pool, raised to hold one more.
func (d *db) Session(ctx context.Context, del bool) (rawsys.Session, error) {
	d.sessions++
	setPool(d.db, d.sessions)
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if del {
		return &session{conn: conn, complete: `DELETE FROM jobs WHERE id IN `}, nil
	}
	return &session{conn: conn, complete: `UPDATE jobs SET state = 'completed' WHERE id IN `}, nil
}

func (d *db) Close() error { return d.db.Close() }

type session struct {
	conn     *sql.Conn
	complete string // the completion, but for its list of IDs
}

// Claim claims in a transaction of its own: BEGIN IMMEDIATE, the UPDATE,
// COMMIT.
func (s *session) Claim(ctx context.Context, n int, ids []int64, args [][]byte) ([]int64, [][]byte, error) {
	tx, err := s.conn.BeginTx(ctx, nil)
	if err != nil {
		return ids, args, err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	rows, err := tx.QueryContext(ctx, claimSQL, n)
	if err != nil {
		return ids, args, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var a []byte
		if err := rows.Scan(&id, &a); err != nil {
			return ids, args, err
		}
		ids, args = append(ids, id), append(args, a)
	}
	if err := rows.Err(); err != nil {
		return ids, args, err
	}
	return ids, args, tx.Commit()
}

// Complete completes in a transaction of its own, like a claim.
func (s *session) Complete(ctx context.Context, ids []int64) error {
	values := make([]any, len(ids))
	for i, id := range ids {
		values[i] = id
	}
	tx, err := s.conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, s.complete+"("+list("?", len(ids))+")", values...); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *session) Close() error { return s.conn.Close() }

// list returns n copies of item separated by commas.
func list(item string, n int) string {
	return strings.Repeat(item+",", n)[:n*(len(item)+1)-1]
}
