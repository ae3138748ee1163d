// Command riversqlite is River on SQLite for the comparison program, which
// builds it and runs it as a child process. It is a module of its own
// because River's SQLite driver is published only for River v0.31.0, which
// cannot share a build with the latest River that the comparison uses on
// Postgres.
package main

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	_ "modernc.org/sqlite"

	"github.com/sluicehq/sluice/bench/harness"
)

func main() {
	factories := map[string]harness.Factory{"river/sqlite": newRiverSQLite}
	harness.Exit(harness.ChildMain(context.Background(), os.Args[1:], os.Stdout, factories))
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// Args are the arguments of every River benchmark job.
type Args struct {
	N int64 `json:"n"`
}

// Kind names the benchmark jobs.
func (Args) Kind() string { return "bench" }

type worker struct {
	river.WorkerDefaults[Args]
	work func(int64)
}

func (w *worker) Work(_ context.Context, job *river.Job[Args]) error {
	w.work(job.Args.N)
	return nil
}

// config returns the same settings the comparison gives River on Postgres:
// with tuned, those of River's own benchmark command; otherwise River's
// defaults with 100 workers.
func config(tuned bool, work func(int64)) *river.Config {
	cfg := &river.Config{Logger: discard}
	if work == nil {
		return cfg // insert-only
	}
	cfg.Workers = river.NewWorkers()
	river.AddWorker(cfg.Workers, &worker{work: work})
	cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 100}}
	if tuned {
		cfg.FetchCooldown = 2 * time.Millisecond
		cfg.FetchPollInterval = 20 * time.Millisecond
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 2000}}
	}
	return cfg
}

type system struct {
	db     *sql.DB
	drv    *riversqlite.Driver
	client *river.Client[*sql.Tx]
}

// newRiverSQLite opens the database with the settings every system gets,
// on one connection, as River's SQLite driver documentation advises.
func newRiverSQLite(_ context.Context, spec *harness.Spec) (harness.System, error) {
	db, err := sql.Open("sqlite", harness.SQLiteDSN(spec.DB))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return &system{db: db, drv: riversqlite.New(db)}, nil
}

func (s *system) Migrate(ctx context.Context) error {
	m, err := rivermigrate.New(s.drv, &rivermigrate.Config{Logger: discard})
	if err != nil {
		return err
	}
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}

func (s *system) InsertFinished(ctx context.Context, n int) error {
	_, err := s.db.ExecContext(ctx, `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?)
		INSERT INTO river_job
		(args, attempt, attempted_at, created_at, finalized_at, kind, max_attempts, priority, queue, scheduled_at, state)
		SELECT json_object('n', -n), 1, t, t, t, 'bench', 25, 1, 'default', t, 'completed'
		FROM g, (SELECT strftime('%Y-%m-%d %H:%M:%f', 'now') AS t)`, n)
	return err
}

func (s *system) Open(_ context.Context, tuned bool, work func(int64)) error {
	c, err := river.NewClient(s.drv, config(tuned, work))
	s.client = c
	return err
}

func (s *system) Start(ctx context.Context) error { return s.client.Start(ctx) }
func (s *system) Stop(ctx context.Context) error  { return s.client.Stop(ctx) }

func (s *system) Enqueue(ctx context.Context, n int64) error {
	_, err := s.client.Insert(ctx, Args{N: n}, nil)
	return err
}

// EnqueueMany uses InsertManyFast, River's fastest batch insert.
func (s *system) EnqueueMany(ctx context.Context, first int64, size int) error {
	params := make([]river.InsertManyParams, size)
	for i := range params {
		params[i] = river.InsertManyParams{Args: Args{N: first + int64(i)}}
	}
	_, err := s.client.InsertManyFast(ctx, params)
	return err
}

func (s *system) Remaining(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx,
		`SELECT count(*) FROM river_job WHERE state NOT IN ('completed', 'cancelled', 'discarded')`).Scan(&n)
	return n, err
}

func (s *system) Close() error { return s.db.Close() }
