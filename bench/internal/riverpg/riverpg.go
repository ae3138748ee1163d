// Package riverpg puts River on Postgres (riverpgxv5) behind
// harness.System: plain River for its own child program, and River with
// observability features on for the programs of its variants. It links
// none of those features, so plain River's program links River, its pgx
// driver and pgx alone.
package riverpg

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/bench/internal/pgpool"
)

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
	log  func(context.Context, int64)
}

func (w *worker) Work(ctx context.Context, job *river.Job[args]) error {
	w.work(job.Args.N)
	if w.log != nil {
		w.log(ctx, job.Args.N)
	}
	return nil
}

// River's throughput settings, from its benchmark command (cmd/river
// bench).
const (
	tunedFetchCooldown     = 2 * time.Millisecond
	tunedFetchPollInterval = 20 * time.Millisecond
	tunedWorkers           = 2000
)

// Extras are what a variant adds to plain River's settings.
type Extras struct {
	// Plugins and Middleware go to River's Config fields of those names,
	// on clients that only insert too, so that enqueues pass through them.
	Plugins    []rivertype.Plugin
	Middleware []rivertype.Middleware
	// Log, when set, is called in each job's Work after the benchmark's
	// own work, with the job's context and number: a variant logs its one
	// line per job there.
	Log func(ctx context.Context, n int64)
	// Release, when set, is called by Close before the pool is closed.
	Release func()
}

// Factory returns the factory of River on Postgres with the Extras each
// of with fills in, in order: plain River with none, a variant with some.
func Factory(with ...func(*Extras) error) harness.Factory {
	return func(ctx context.Context, spec *harness.Spec) (harness.System, error) {
		s := &system{schema: spec.Schema}
		for _, w := range with {
			if err := w(&s.extras); err != nil {
				s.release()
				return nil, err
			}
		}
		pool, err := pgpool.New(ctx, spec)
		if err != nil {
			s.release()
			return nil, err
		}
		s.pool, s.drv = pool, riverpgxv5.New(pool)
		return s, nil
	}
}

type system struct {
	schema string
	extras Extras
	pool   *pgxpool.Pool
	drv    *riverpgxv5.Driver
	client *river.Client[pgx.Tx]
}

// config returns River's configuration: with tuned, the settings
// River's own benchmark uses for throughput; otherwise River's defaults
// with the 100 workers its documentation's examples give the default
// queue (River has no default worker count).
func (s *system) config(tuned bool, work func(int64)) *river.Config {
	cfg := &river.Config{Logger: discard, Schema: s.schema, Plugins: s.extras.Plugins, Middleware: s.extras.Middleware}
	if work == nil {
		return cfg // insert-only
	}
	cfg.Workers = river.NewWorkers()
	river.AddWorker(cfg.Workers, &worker{work: work, log: s.extras.Log})
	cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 100}}
	if tuned {
		cfg.FetchCooldown = tunedFetchCooldown
		cfg.FetchPollInterval = tunedFetchPollInterval
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: tunedWorkers}}
	}
	return cfg
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
	c, err := river.NewClient(s.drv, s.config(tuned, work))
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
	s.release()
	s.pool.Close()
	return nil
}

// release runs the Extras' Release, if any.
func (s *system) release() {
	if s.extras.Release != nil {
		s.extras.Release()
	}
}
