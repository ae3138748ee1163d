// Package sluicesys puts sluice behind harness.System over any of its
// drivers. It imports no concrete driver: each of sluice's child programs
// gives it its own, so that program links that driver alone.
package sluicesys

import (
	"context"
	"log/slog"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/driver"
)

var discard = slog.New(slog.DiscardHandler)

// Args are the arguments of every sluice benchmark job.
type Args struct {
	N int64 `json:"n"`
}

// Topic names the benchmark jobs.
func (Args) Topic() string { return "bench" }

// Setup is what sluice needs from one driver's program: the driver, its
// settings for throughput, and access to the database for the
// comparison's own SQL.
type Setup[TTx any] struct {
	// Driver is the driver the client works through.
	Driver driver.Driver[TTx]
	// TunedWorkers is the worker count of the default queue for
	// throughput. With no-op jobs a worker is free again at once, so the
	// count sets how many jobs each claim and each completion batch
	// carries.
	TunedWorkers int
	// FinishedInsert is the statement that inserts completed jobs, as many
	// as its one argument says, with IDs below any UUIDv7 the client
	// makes, as older jobs would have.
	FinishedInsert string
	// Exec runs a statement; Count runs a query of one number.
	Exec  func(ctx context.Context, query string, args ...any) error
	Count func(ctx context.Context, query string) (int64, error)
	// Release releases the database.
	Release func()

	// Configure are changes to the client's Config, made in order after the
	// benchmark's own settings: the observability features that the
	// variants of sluice turn on.
	Configure []func(*sluice.Config)
	// LogLine makes every job log one record through sluice.Logger.
	LogLine bool
}

// New returns sluice over setup's driver.
func New[TTx any](setup Setup[TTx]) harness.System {
	return &system[TTx]{Setup: setup}
}

type system[TTx any] struct {
	Setup[TTx]
	client *sluice.Client[TTx]
}

func (s *system[TTx]) Migrate(ctx context.Context) error { return s.Driver.Migrate(ctx) }

func (s *system[TTx]) InsertFinished(ctx context.Context, n int) error {
	return s.Exec(ctx, s.FinishedInsert, n)
}

func (s *system[TTx]) Open(_ context.Context, tuned bool, work func(int64)) error {
	cfg := &sluice.Config{Logger: discard}
	if work != nil {
		cfg.Workers = sluice.NewWorkers()
		logLine := s.LogLine
		sluice.AddWorker(cfg.Workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[Args]) error {
			work(job.Args.N)
			if logLine {
				sluice.Logger(ctx).Info("worked", "n", job.Args.N)
			}
			return nil
		}))
	}
	if tuned {
		cfg.Queues = map[string]sluice.QueueConfig{sluice.QueueDefault: {MaxWorkers: s.TunedWorkers}}
	}
	for _, change := range s.Configure {
		change(cfg)
	}
	c, err := sluice.NewClient(s.Driver, cfg)
	if err != nil {
		return err
	}
	s.client = c
	return nil
}

func (s *system[TTx]) Start(ctx context.Context) error { return s.client.Start(ctx) }
func (s *system[TTx]) Stop(ctx context.Context) error  { return s.client.Stop(ctx) }

func (s *system[TTx]) Enqueue(ctx context.Context, n int64) error {
	_, err := s.client.Enqueue(ctx, Args{N: n}, nil)
	return err
}

func (s *system[TTx]) EnqueueMany(ctx context.Context, first int64, size int) error {
	params := make([]sluice.EnqueueParams, size)
	for i := range params {
		params[i] = sluice.EnqueueParams{Args: Args{N: first + int64(i)}}
	}
	_, err := s.client.EnqueueMany(ctx, params)
	return err
}

func (s *system[TTx]) Remaining(ctx context.Context) (int64, error) {
	return s.Count(ctx, `SELECT count(*) FROM sluice_jobs WHERE status IN ('pending', 'processing')`)
}

func (s *system[TTx]) Close() error {
	s.Release()
	return nil
}

// Factory returns the factory of sluice over the setup open makes, changed
// by each of with: plain sluice with none, a variant of it with some.
func Factory[TTx any](open func(context.Context, *harness.Spec) (Setup[TTx], error),
	with ...func(Setup[TTx]) (Setup[TTx], error)) harness.Factory {
	return func(ctx context.Context, spec *harness.Spec) (harness.System, error) {
		setup, err := open(ctx, spec)
		if err != nil {
			return nil, err
		}
		for _, w := range with {
			if setup, err = w(setup); err != nil {
				setup.Release()
				return nil, err
			}
		}
		return New(setup), nil
	}
}

// AddRelease makes Release call release first, then release the database.
func (s *Setup[TTx]) AddRelease(release func()) {
	db := s.Release
	s.Release = func() {
		release()
		db()
	}
}

// Logged returns setup with one log line per job, kept with the job.
func Logged[TTx any](setup Setup[TTx]) (Setup[TTx], error) {
	setup.LogLine = true
	return setup, nil
}

// Deleting returns setup with each completed job deleted as it completes
// (Retention.Completed = KeepNone), in the statement that records its
// completion, as a queue that keeps no completed jobs works.
func Deleting[TTx any](setup Setup[TTx]) (Setup[TTx], error) {
	setup.Configure = append(setup.Configure, func(cfg *sluice.Config) {
		cfg.Retention.Completed = sluice.KeepNone
	})
	return setup, nil
}
