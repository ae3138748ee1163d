// Command river-pg is River on Postgres (riverpgxv5) for the comparison
// program, which builds it and runs it as a child process. It links River,
// its pgx driver and pgx and no other system or database library, so the
// memory the comparison reads from it is River's on Postgres alone.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/bench/internal/pgpool"
)

var factories = map[string]harness.Factory{"river/pg": newSystem}

func main() {
	harness.Exit(harness.ChildMain(context.Background(), os.Args[1:], os.Stdout, factories))
}

var discard = slog.New(slog.DiscardHandler)

// args are the arguments of every River benchmark job.
type args struct {
	N int64 `json:"n"`
}

// Kind names the benchmark jobs.
func (args) Kind() string { return "bench" }

type worker struct {
	river.WorkerDefaults[args]
	work func(int64)
}

func (w *worker) Work(_ context.Context, job *river.Job[args]) error {
	w.work(job.Args.N)
	return nil
}

// config returns River's configuration: with tuned, the settings
// River's own benchmark (cmd/river bench) uses for throughput; otherwise
// River's defaults with the 100 workers its documentation's examples give
// the default queue (River has no default worker count).
func config(schema string, tuned bool, work func(int64)) *river.Config {
	cfg := &river.Config{Logger: discard, Schema: schema}
	if work == nil {
		return cfg // insert-only
	}
	cfg.Workers = river.NewWorkers()
	river.AddWorker(cfg.Workers, &worker{work: work})
	cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 100}}
	if tuned {
		cfg.FetchCooldown = tunedFetchCooldown
		cfg.FetchPollInterval = tunedFetchPollInterval
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: tunedWorkers}}
	}
	return cfg
}

// River's throughput settings, from its benchmark command.
const (
	tunedFetchCooldown     = 2e6  // 2 ms
	tunedFetchPollInterval = 20e6 // 20 ms
	tunedWorkers           = 2000
)

type system struct {
	schema string
	pool   *pgxpool.Pool
	drv    *riverpgxv5.Driver
	client *river.Client[pgx.Tx]
}

func newSystem(ctx context.Context, spec *harness.Spec) (harness.System, error) {
	pool, err := pgpool.New(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &system{schema: spec.Schema, pool: pool, drv: riverpgxv5.New(pool)}, nil
}

func (s *system) Migrate(ctx context.Context) error {
	m, err := rivermigrate.New(s.drv, &rivermigrate.Config{Logger: discard, Schema: s.schema})
	if err != nil {
		return err
	}
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}

func (s *system) InsertFinished(ctx context.Context, n int) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO river_job
		(args, attempt, attempted_at, created_at, finalized_at, kind, max_attempts, priority, queue, scheduled_at, state)
		SELECT jsonb_build_object('n', -g), 1, now(), now(), now(), 'bench', 25, 1, 'default', now(), 'completed'
		FROM generate_series(1, $1::int) g`, n)
	return err
}

func (s *system) Open(_ context.Context, tuned bool, work func(int64)) error {
	c, err := river.NewClient(s.drv, config(s.schema, tuned, work))
	s.client = c
	return err
}

func (s *system) Start(ctx context.Context) error { return s.client.Start(ctx) }
func (s *system) Stop(ctx context.Context) error  { return s.client.Stop(ctx) }

func (s *system) Enqueue(ctx context.Context, n int64) error {
	_, err := s.client.Insert(ctx, args{N: n}, nil)
	return err
}

// EnqueueMany uses InsertManyFast, River's fastest batch insert (COPY on
// Postgres), which returns no rows.
func (s *system) EnqueueMany(ctx context.Context, first int64, size int) error {
	params := make([]river.InsertManyParams, size)
	for i := range params {
		params[i] = river.InsertManyParams{Args: args{N: first + int64(i)}}
	}
	_, err := s.client.InsertManyFast(ctx, params)
	return err
}

func (s *system) Remaining(ctx context.Context) (int64, error) {
	return pgpool.Count(s.pool)(ctx, `SELECT count(*) FROM river_job WHERE state NOT IN ('completed', 'cancelled', 'discarded')`)
}

func (s *system) Close() error {
	s.pool.Close()
	return nil
}
