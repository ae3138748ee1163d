// Command raw-pg is the comparison's ceiling on Postgres, the systems raw
// and raw-delete (see internal/rawsys): batched claims and completions in
// plain SQL through pgx, with no queue logic. It links pgx and no system.
package main

import (
	"context"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/bench/internal/pgpool"
	"github.com/sluicehq/sluice/bench/internal/rawsys"
)

// tuned are the ceiling's settings on Postgres, the best of a sweep
// (cmd/rawsweep; see bench/README.md): batches of 300 or 1,000 on 4 or 8
// connections did about as well as each other, fewer connections or
// smaller batches less.
var tuned = rawsys.Settings{Batch: 1000, Conns: 4}

var factories = rawsys.Factories("pg", tuned, open)

func main() {
	harness.Exit(harness.ChildMain(context.Background(), os.Args[1:], os.Stdout, factories))
}

// schema is the jobs table and the index of pending jobs a claim reads.
var schema = []string{
	`CREATE TABLE jobs (
		id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		state text NOT NULL DEFAULT 'pending',
		args jsonb NOT NULL
	)`,
	`CREATE INDEX jobs_pending ON jobs (id) WHERE state = 'pending'`,
}

const (
	// claimSQL takes the oldest pending jobs no other session is claiming.
	// It reads them as an array, not "id IN (SELECT ...)": for that form
	// the planner hashes the subquery's IDs and scans the whole table
	// against them (53 ms for 500 of 100,000 jobs rather than 3).
	claimSQL = `UPDATE jobs SET state = 'running'
		WHERE id = ANY(ARRAY(SELECT id FROM jobs WHERE state = 'pending' ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED))
		RETURNING id, args`
	completeSQL = `UPDATE jobs SET state = 'completed' WHERE id = ANY($1)`
	deleteSQL   = `DELETE FROM jobs WHERE id = ANY($1)`
)

type db struct {
	pool *pgxpool.Pool
}

// open opens the pool every system gets, on which jobs are enqueued with
// the server's synchronous commit.
func open(ctx context.Context, spec *harness.Spec) (rawsys.DB, error) {
	pool, err := pgpool.New(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &db{pool: pool}, nil
}

func (d *db) Migrate(ctx context.Context) error {
	for _, stmt := range schema {
		if _, err := d.pool.Exec(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}

func (d *db) InsertFinished(ctx context.Context, n int) error {
	return pgpool.Exec(d.pool)(ctx, `INSERT INTO jobs (state, args)
		SELECT 'completed', jsonb_build_object('n', -g) FROM generate_series(1, $1::int) g`, n)
}

func (d *db) Insert(ctx context.Context, args []byte) error {
	return pgpool.Exec(d.pool)(ctx, `INSERT INTO jobs (args) VALUES ($1)`, args)
}

// InsertMany copies the jobs in (COPY), Postgres's fastest bulk insert.
func (d *db) InsertMany(ctx context.Context, args [][]byte) error {
	_, err := d.pool.CopyFrom(ctx, pgx.Identifier{"jobs"}, []string{"args"},
		pgx.CopyFromSlice(len(args), func(i int) ([]any, error) { return []any{args[i]}, nil }))
	return err
}

func (d *db) Count(ctx context.Context, query string) (int64, error) {
	return pgpool.Count(d.pool)(ctx, query)
}

// Session opens a connection of its own beside the pool, with
// synchronous_commit off as sluice sets it for its claims and
// completions: a commit does not wait for its WAL to reach the disk.
func (d *db) Session(ctx context.Context, del bool) (rawsys.Session, error) {
	cfg := d.pool.Config().ConnConfig
	cfg.RuntimeParams["synchronous_commit"] = "off"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if del {
		return &session{conn: conn, complete: deleteSQL}, nil
	}
	return &session{conn: conn, complete: completeSQL}, nil
}

func (d *db) Close() error {
	d.pool.Close()
	return nil
}

type session struct {
	conn     *pgx.Conn
	complete string
}

func (s *session) Claim(ctx context.Context, n int, ids []int64, args [][]byte) ([]int64, [][]byte, error) {
	rows, err := s.conn.Query(ctx, claimSQL, n)
	if err != nil {
		return ids, args, err
	}
	var id int64
	var a []byte // a fresh slice for each row: pgx copies jsonb into a new one
	_, err = pgx.ForEachRow(rows, []any{&id, &a}, func() error {
		ids, args = append(ids, id), append(args, a)
		return nil
	})
	return ids, args, err
}

func (s *session) Complete(ctx context.Context, ids []int64) error {
	_, err := s.conn.Exec(ctx, s.complete, ids)
	return err
}

func (s *session) Close() error { return s.conn.Close(context.Background()) }
