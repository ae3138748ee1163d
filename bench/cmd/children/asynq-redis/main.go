// Command asynq-redis is asynq on Redis for the comparison program, which
// starts a fresh redis-server for each measurement, passes its address in
// the Spec's DB (redis://host:port), and runs this program as a child
// process. It links asynq and its Redis client (go-redis) and no other
// system or database library, so the memory the comparison reads from it
// is asynq's alone. The systems asynq and asynq-rdb differ only in the
// server's persistence, which the comparison program sets; both are
// reported in the Postgres tables, against the queues on Postgres.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/bench/harness"
)

var factories = map[string]harness.Factory{
	"asynq/pg":     newSystem,
	"asynq-rdb/pg": newSystem,
}

func main() {
	harness.Exit(harness.ChildMain(context.Background(), os.Args[1:], os.Stdout, factories))
}

// taskType names the benchmark tasks; the payload is the job's number in
// decimal.
const taskType = "bench"

// defaultQueue is the queue asynq's Client and Server use unless told
// otherwise.
const defaultQueue = "default"

// asynq's throughput settings: the concurrency of asynq's own end-to-end
// benchmarks (benchmark_test.go) and of its README's server, against a
// default of one worker per CPU.
const tunedConcurrency = 10

// poolSize is the number of connections of the Redis client, the 20 of
// the Postgres systems' pools (go-redis's default is ten per CPU).
const poolSize = 20

// enqueuers is how many goroutines EnqueueMany runs Client.Enqueue from:
// asynq v0.26 has no batch enqueue, and each Enqueue is one round trip, so
// the batch is spread over every connection of the pool (bench/README.md
// gives the sweep behind the number).
const enqueuers = poolSize

// finishedRetention keeps the tasks InsertFinished completes for longer
// than any measurement, so asynq's janitor deletes none of them during one.
const finishedRetention = 24 * time.Hour

type system struct {
	rdb       *redis.Client
	client    *asynq.Client
	inspector *asynq.Inspector
	server    *asynq.Server
	mux       *asynq.ServeMux
}

func newSystem(_ context.Context, spec *harness.Spec) (harness.System, error) {
	opts, err := redis.ParseURL(spec.DB)
	if err != nil {
		return nil, fmt.Errorf("redis URL: %w", err)
	}
	opts.PoolSize = poolSize
	rdb := redis.NewClient(opts)
	return &system{
		rdb:       rdb,
		client:    asynq.NewClientFromRedisClient(rdb),
		inspector: asynq.NewInspectorFromRedisClient(rdb),
	}, nil
}

// Migrate has nothing to do: asynq creates its keys as it goes.
func (s *system) Migrate(ctx context.Context) error { return s.rdb.Ping(ctx).Err() }

// InsertFinished leaves n completed tasks as asynq keeps them, through its
// public API alone: asynq keeps a task once it is done only when it was
// enqueued with a Retention, so the tasks are enqueued with one longer
// than any measurement and worked by a server with the throughput
// settings, until all n are completed.
func (s *system) InsertFinished(ctx context.Context, n int) error {
	err := s.enqueueConcurrently(ctx, n, func(i int) int64 { return -int64(i) - 1 }, asynq.Retention(finishedRetention))
	if err != nil {
		return err
	}
	srv := asynq.NewServerFromRedisClient(s.rdb, config(true))
	if err := srv.Start(asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return nil })); err != nil {
		return err
	}
	defer srv.Shutdown()
	for {
		info, err := s.inspector.GetQueueInfo(defaultQueue)
		if err != nil {
			return err
		}
		if info.Completed >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d tasks completed: %w", info.Completed, n, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// config returns the server's configuration: asynq's defaults, with the
// concurrency of its own benchmarks when tuned. Logging is limited to
// warnings, which reach the comparison only when a measurement fails.
func config(tuned bool) asynq.Config {
	cfg := asynq.Config{LogLevel: asynq.WarnLevel}
	if tuned {
		cfg.Concurrency = tunedConcurrency
	}
	return cfg
}

func (s *system) Open(_ context.Context, tuned bool, work func(int64)) error {
	if work == nil {
		return nil // insert-only: the client alone
	}
	s.mux = asynq.NewServeMux()
	s.mux.HandleFunc(taskType, func(_ context.Context, t *asynq.Task) error {
		n, err := strconv.ParseInt(string(t.Payload()), 10, 64)
		if err != nil {
			return fmt.Errorf("payload %q: %w", t.Payload(), err)
		}
		work(n)
		return nil
	})
	s.server = asynq.NewServerFromRedisClient(s.rdb, config(tuned))
	return nil
}

func (s *system) Start(context.Context) error { return s.server.Start(s.mux) }

// Stop stops the server taking tasks and waits for those it has started
// (asynq's Stop, then Shutdown), or for ctx.
func (s *system) Stop(ctx context.Context) error {
	if s.server == nil {
		return nil
	}
	done := make(chan struct{})
	go func() {
		s.server.Stop()
		s.server.Shutdown()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *system) Enqueue(ctx context.Context, n int64) error {
	_, err := s.client.EnqueueContext(ctx, task(n))
	return err
}

func task(n int64) *asynq.Task {
	return asynq.NewTask(taskType, strconv.AppendInt(nil, n, 10))
}

// EnqueueMany enqueues the batch through Client.Enqueue from enqueuers
// goroutines at once: asynq v0.26 has no batch enqueue (BatchEnqueue came
// after it), and each Enqueue is one round trip to Redis.
func (s *system) EnqueueMany(ctx context.Context, first int64, size int) error {
	return s.enqueueConcurrently(ctx, size, func(i int) int64 { return first + int64(i) })
}

// enqueueConcurrently enqueues size tasks, the i-th numbered number(i),
// from enqueuers goroutines, and returns the first error.
func (s *system) enqueueConcurrently(ctx context.Context, size int, number func(i int) int64, opts ...asynq.Option) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, enqueuers)
	for g := range min(enqueuers, size) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < size; i = int(next.Add(1)) - 1 {
				if _, err := s.client.EnqueueContext(ctx, task(number(i)), opts...); err != nil {
					errs[g] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Remaining counts the tasks not yet done in every queue: pending, active,
// scheduled and waiting for a retry, from asynq's Inspector.
func (s *system) Remaining(context.Context) (int64, error) {
	queues, err := s.inspector.Queues()
	if err != nil {
		return 0, err
	}
	var n int64
	for _, q := range queues {
		info, err := s.inspector.GetQueueInfo(q)
		if err != nil {
			return 0, err
		}
		n += int64(info.Pending + info.Active + info.Scheduled + info.Retry)
	}
	return n, nil
}

// Close closes the Redis client that the client, the inspector and the
// server share (asynq closes none of them itself).
func (s *system) Close() error { return s.rdb.Close() }
