// Package systems puts each job queue the comparison measures behind
// harness.System: sluice on Postgres and SQLite, River on Postgres, and
// backlite on SQLite. River on SQLite lives in the riversqlite module.
package systems

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/pgxdriver"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// Factories are the systems of this module, by "system/driver".
var Factories = map[string]harness.Factory{
	"sluice/pg":       newSluicePG,
	"sluice/sqlite":   newSluiceSQLite,
	"river/pg":        newRiverPG,
	"backlite/sqlite": newBacklite,
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// Args are the arguments of every sluice benchmark job.
type Args struct {
	N int64 `json:"n"`
}

// Topic names the benchmark jobs.
func (Args) Topic() string { return "bench" }

// Sluice's worker counts for throughput. With no-op jobs a worker is free
// again at once, so the count sets how many jobs each claim and each
// completion batch carries. On Postgres, where every statement is a round
// trip and a commit, larger batches pay off up to about a thousand; on
// SQLite, a local file, a few dozen are enough.
const (
	TunedWorkersPG     = 1000
	TunedWorkersSQLite = 30
)

// sluiceSystem is sluice over one driver.
type sluiceSystem[TTx any] struct {
	drv    driver.Driver[TTx]
	client *sluice.Client[TTx]
	// tuned is the worker count for throughput.
	tuned int
	// exec runs the system's own SQL; close releases the database.
	exec           func(ctx context.Context, query string, args ...any) error
	count          func(ctx context.Context, query string) (int64, error)
	finishedInsert string
	close          func()
}

func (s *sluiceSystem[TTx]) Migrate(ctx context.Context) error { return s.drv.Migrate(ctx) }

func (s *sluiceSystem[TTx]) InsertFinished(ctx context.Context, n int) error {
	return s.exec(ctx, s.finishedInsert, n)
}

func (s *sluiceSystem[TTx]) Open(_ context.Context, tuned bool, work func(int64)) error {
	cfg := &sluice.Config{Logger: discard}
	if work != nil {
		cfg.Workers = sluice.NewWorkers()
		sluice.AddWorker(cfg.Workers, sluice.WorkFunc(func(_ context.Context, job *sluice.Job[Args]) error {
			work(job.Args.N)
			return nil
		}))
	}
	if tuned {
		cfg.Queues = map[string]sluice.QueueConfig{sluice.QueueDefault: {MaxWorkers: s.tuned}}
	}
	c, err := sluice.NewClient(s.drv, cfg)
	if err != nil {
		return err
	}
	s.client = c
	return nil
}

func (s *sluiceSystem[TTx]) Start(ctx context.Context) error { return s.client.Start(ctx) }
func (s *sluiceSystem[TTx]) Stop(ctx context.Context) error  { return s.client.Stop(ctx) }

func (s *sluiceSystem[TTx]) Enqueue(ctx context.Context, n int64) error {
	_, err := s.client.Enqueue(ctx, Args{N: n}, nil)
	return err
}

func (s *sluiceSystem[TTx]) EnqueueMany(ctx context.Context, first int64, size int) error {
	params := make([]sluice.EnqueueParams, size)
	for i := range params {
		params[i] = sluice.EnqueueParams{Args: Args{N: first + int64(i)}}
	}
	_, err := s.client.EnqueueMany(ctx, params)
	return err
}

func (s *sluiceSystem[TTx]) Remaining(ctx context.Context) (int64, error) {
	return s.count(ctx, `SELECT count(*) FROM sluice_jobs WHERE status IN ('pending', 'processing')`)
}

func (s *sluiceSystem[TTx]) Close() error {
	s.close()
	return nil
}

// sluiceFinishedPG inserts $1 completed jobs with IDs below any UUIDv7 the
// client makes, as older jobs would have.
const sluiceFinishedPG = `INSERT INTO sluice_jobs
	(id, topic, queue, payload, status, attempt, max_retries, run_at, created_at, attempted_at, finalized_at)
	SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, 'bench', 'default',
		jsonb_build_object('n', -g), 'completed', 1, 3, now(), now(), now(), now()
	FROM generate_series(1, $1::int) g`

func newSluicePG(ctx context.Context, spec *harness.Spec) (harness.System, error) {
	pool, err := NewPool(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &sluiceSystem[pgx.Tx]{
		drv:            pgxdriver.New(pool, pgxdriver.WithSchema(spec.Schema)),
		tuned:          TunedWorkersPG,
		exec:           poolExec(pool),
		count:          poolCount(pool),
		finishedInsert: sluiceFinishedPG,
		close:          pool.Close,
	}, nil
}

// sluiceFinishedSQLite is sluiceFinishedPG for SQLite, whose times are
// microseconds since the epoch.
const sluiceFinishedSQLite = `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?)
	INSERT INTO sluice_jobs
	(id, topic, queue, payload, status, attempt, max_retries, run_at, created_at, attempted_at, finalized_at)
	SELECT printf('00000000-0000-7000-8000-%012x', n), 'bench', 'default', json_object('n', -n),
		'completed', 1, 3, t, t, t, t
	FROM g, (SELECT CAST(unixepoch('subsec') * 1000000 AS INTEGER) AS t)`

func newSluiceSQLite(_ context.Context, spec *harness.Spec) (harness.System, error) {
	if got, want := sqlitedriver.DSN(spec.DB), harness.SQLiteDSN(spec.DB); got != want {
		return nil, fmt.Errorf("sqlitedriver.DSN differs from the settings every system gets:\n%s\n%s", got, want)
	}
	db, err := sqlitedriver.Open(spec.DB)
	if err != nil {
		return nil, err
	}
	return &sluiceSystem[*sql.Tx]{
		drv:            sqlitedriver.New(db),
		tuned:          TunedWorkersSQLite,
		exec:           dbExec(db),
		count:          dbCount(db),
		finishedInsert: sluiceFinishedSQLite,
		close:          func() { _ = db.Close() },
	}, nil
}

// PoolSize is the number of connections every system's Postgres pool
// holds.
const PoolSize = 20

// NewPool opens a pool on spec's database whose connections resolve names
// in spec's schema. Each system is also told its schema through its own
// option, which keeps its LISTEN/NOTIFY channels apart from those of other
// programs using the same server.
func NewPool(ctx context.Context, spec *harness.Spec) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(spec.DB)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = PoolSize
	cfg.ConnConfig.RuntimeParams["search_path"] = spec.Schema
	return pgxpool.NewWithConfig(ctx, cfg)
}

func poolExec(pool *pgxpool.Pool) func(context.Context, string, ...any) error {
	return func(ctx context.Context, query string, args ...any) error {
		_, err := pool.Exec(ctx, query, args...)
		return err
	}
}

func poolCount(pool *pgxpool.Pool) func(context.Context, string) (int64, error) {
	return func(ctx context.Context, query string) (int64, error) {
		var n int64
		err := pool.QueryRow(ctx, query).Scan(&n)
		return n, err
	}
}

func dbExec(db *sql.DB) func(context.Context, string, ...any) error {
	return func(ctx context.Context, query string, args ...any) error {
		_, err := db.ExecContext(ctx, query, args...)
		return err
	}
}

func dbCount(db *sql.DB) func(context.Context, string) (int64, error) {
	return func(ctx context.Context, query string) (int64, error) {
		var n int64
		err := db.QueryRowContext(ctx, query).Scan(&n)
		return n, err
	}
}
