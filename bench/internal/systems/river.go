package systems

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/sluicehq/sluice/bench/harness"
)

// RiverArgs are the arguments of every River benchmark job.
type RiverArgs struct {
	N int64 `json:"n"`
}

// Kind names the benchmark jobs.
func (RiverArgs) Kind() string { return "bench" }

type riverWorker struct {
	river.WorkerDefaults[RiverArgs]
	work func(int64)
}

func (w *riverWorker) Work(_ context.Context, job *river.Job[RiverArgs]) error {
	w.work(job.Args.N)
	return nil
}

// RiverConfig returns River's configuration: with tuned, the settings
// River's own benchmark (cmd/river bench) uses for throughput; otherwise
// River's defaults with the 100 workers its documentation's examples give
// the default queue (River has no default worker count).
func RiverConfig(schema string, tuned bool, work func(int64)) *river.Config {
	cfg := &river.Config{Logger: discard, Schema: schema}
	if work == nil {
		return cfg // insert-only
	}
	cfg.Workers = river.NewWorkers()
	river.AddWorker(cfg.Workers, &riverWorker{work: work})
	cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 100}}
	if tuned {
		cfg.FetchCooldown = riverTunedFetchCooldown
		cfg.FetchPollInterval = riverTunedFetchPollInterval
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: riverTunedWorkers}}
	}
	return cfg
}

// River's throughput settings, from its benchmark command.
const (
	riverTunedFetchCooldown     = 2e6  // 2 ms
	riverTunedFetchPollInterval = 20e6 // 20 ms
	riverTunedWorkers           = 2000
)

type riverPG struct {
	schema string
	pool   *pgxpool.Pool
	drv    *riverpgxv5.Driver
	client *river.Client[pgx.Tx]
}

func newRiverPG(ctx context.Context, spec *harness.Spec) (harness.System, error) {
	pool, err := NewPool(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &riverPG{schema: spec.Schema, pool: pool, drv: riverpgxv5.New(pool)}, nil
}

func (s *riverPG) Migrate(ctx context.Context) error {
	m, err := rivermigrate.New(s.drv, &rivermigrate.Config{Logger: discard, Schema: s.schema})
	if err != nil {
		return err
	}
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}

func (s *riverPG) InsertFinished(ctx context.Context, n int) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO river_job
		(args, attempt, attempted_at, created_at, finalized_at, kind, max_attempts, priority, queue, scheduled_at, state)
		SELECT jsonb_build_object('n', -g), 1, now(), now(), now(), 'bench', 25, 1, 'default', now(), 'completed'
		FROM generate_series(1, $1::int) g`, n)
	return err
}

func (s *riverPG) Open(_ context.Context, tuned bool, work func(int64)) error {
	c, err := river.NewClient(s.drv, RiverConfig(s.schema, tuned, work))
	s.client = c
	return err
}

func (s *riverPG) Start(ctx context.Context) error { return s.client.Start(ctx) }
func (s *riverPG) Stop(ctx context.Context) error  { return s.client.Stop(ctx) }

func (s *riverPG) Enqueue(ctx context.Context, n int64) error {
	_, err := s.client.Insert(ctx, RiverArgs{N: n}, nil)
	return err
}

// EnqueueMany uses InsertManyFast, River's fastest batch insert (COPY on
// Postgres), which returns no rows.
func (s *riverPG) EnqueueMany(ctx context.Context, first int64, size int) error {
	params := make([]river.InsertManyParams, size)
	for i := range params {
		params[i] = river.InsertManyParams{Args: RiverArgs{N: first + int64(i)}}
	}
	_, err := s.client.InsertManyFast(ctx, params)
	return err
}

func (s *riverPG) Remaining(ctx context.Context) (int64, error) {
	return poolCount(s.pool)(ctx, `SELECT count(*) FROM river_job WHERE state NOT IN ('completed', 'cancelled', 'discarded')`)
}

func (s *riverPG) Close() error {
	s.pool.Close()
	return nil
}
