// Command faultworker is the worker process the fault-injection suite
// starts, kills and restarts. It works fault jobs (by default of the topic
// "fault") on Postgres or on a SQLite file: each job inserts one row keyed
// by its ID into fault_effects and acks itself in the same transaction, so
// the suite can count effects per job afterwards. With -produce it
// enqueues jobs instead, printing each job's ID once its transaction has
// committed. With -tick it also schedules fault jobs every tick, twice: a
// periodic job in its Config that catches up once, and a stored schedule,
// created by the first process to start, that skips missed ticks (see
// faultjob.Schedules). -queues and -topics name the queues (see
// faultjob.Queues) and the topics it works (the workflow scenario's steps
// among them), and -attempts records the start of every attempt in
// fault_attempts.
//
// -listen-url gives the driver a direct connection for LISTEN when -url
// goes through a pooler (see pgxdriver.WithListenURL).
//
// It prints "ready" once started and runs until SIGTERM or SIGINT, then
// stops the client with the deadline -stop-timeout.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/pgxdriver"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/internal/testkit/faults/faultjob"
)

type options struct {
	url         string
	listenURL   string
	path        string
	workers     int
	conns       int
	work        time.Duration
	lease       time.Duration
	poll        time.Duration
	stopTimeout time.Duration
	produce     int
	batch       int
	every       time.Duration
	tick        time.Duration
	queues      string
	topics      string
	attempts    bool
}

func main() {
	var o options
	flag.StringVar(&o.url, "url", "", "Postgres URL (one of -url and -sqlite)")
	flag.StringVar(&o.listenURL, "listen-url", "", "Postgres URL of a direct connection for LISTEN, when -url goes through a pooler")
	flag.StringVar(&o.path, "sqlite", "", "SQLite database file")
	flag.IntVar(&o.workers, "workers", 4, "jobs worked at once")
	flag.IntVar(&o.conns, "conns", 4, "Postgres pool size")
	flag.DurationVar(&o.work, "work", 10*time.Millisecond, "how long each job works before its business write")
	flag.DurationVar(&o.lease, "lease", 2*time.Second, "lease duration")
	flag.DurationVar(&o.poll, "poll", 200*time.Millisecond, "the client's poll interval")
	flag.DurationVar(&o.stopTimeout, "stop-timeout", 5*time.Second, "deadline given to Stop")
	flag.IntVar(&o.produce, "produce", 0, "enqueue this many jobs instead of working, then exit")
	flag.IntVar(&o.batch, "batch", 20, "jobs per batch when producing")
	flag.DurationVar(&o.every, "every", 0, "time between batches when producing; 0 is as fast as possible")
	flag.DurationVar(&o.tick, "tick", 0, "schedule fault jobs at this interval; 0 schedules none")
	flag.StringVar(&o.queues, "queues", sluice.QueueDefault, "the queues to work, separated by commas")
	flag.StringVar(&o.topics, "topics", faultjob.Topic, "the topics to work, separated by commas: "+
		faultjob.Topic+", "+faultjob.KeyedTopic+", "+faultjob.StepTopic)
	flag.BoolVar(&o.attempts, "attempts", false, "record the start of every attempt in fault_attempts")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var err error
	switch {
	case o.url != "":
		err = runPostgres(ctx, &o)
	case o.path != "":
		err = runSQLite(ctx, &o)
	default:
		err = errors.New("one of -url and -sqlite is required")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "faultworker:", err)
		os.Exit(1)
	}
}

func runPostgres(ctx context.Context, o *options) error {
	cfg, err := pgxpool.ParseConfig(o.url)
	if err != nil {
		return err
	}
	cfg.MaxConns = int32(o.conns)
	cfg.ConnConfig.RuntimeParams["application_name"] = faultjob.AppName
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	st := &faultjob.Store[pgx.Tx]{
		Begin:    func(ctx context.Context) (pgx.Tx, error) { return pool.Begin(ctx) },
		Commit:   func(ctx context.Context, tx pgx.Tx) error { return tx.Commit(ctx) },
		Rollback: func(ctx context.Context, tx pgx.Tx) error { return tx.Rollback(ctx) },
		Exec: func(ctx context.Context, tx pgx.Tx, query string, args ...any) error {
			_, err := tx.Exec(ctx, query, args...)
			return err
		},
		Placeholder: "$1, $2, $3",
		WorkInTx:    true,
	}
	var opts []pgxdriver.Option
	if o.listenURL != "" {
		opts = append(opts, pgxdriver.WithListenURL(o.listenURL))
	}
	return run(ctx, o, pgxdriver.New(pool, opts...), st)
}

func runSQLite(ctx context.Context, o *options) error {
	db, err := sqlitedriver.Open(o.path)
	if err != nil {
		return err
	}
	defer db.Close()
	st := &faultjob.Store[*sql.Tx]{
		Begin:    func(ctx context.Context) (*sql.Tx, error) { return db.BeginTx(ctx, nil) },
		Commit:   func(_ context.Context, tx *sql.Tx) error { return tx.Commit() },
		Rollback: func(_ context.Context, tx *sql.Tx) error { return tx.Rollback() },
		Exec: func(ctx context.Context, tx *sql.Tx, query string, args ...any) error {
			_, err := tx.ExecContext(ctx, query, args...)
			return err
		},
		Placeholder: "?, ?, ?",
	}
	return run(ctx, o, sqlitedriver.New(db), st)
}

func run[TTx any](ctx context.Context, o *options, d driver.Driver[TTx], st *faultjob.Store[TTx]) error {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if o.produce > 0 {
		c, err := sluice.NewClient(d, &sluice.Config{Logger: logger})
		if err != nil {
			return err
		}
		return faultjob.Produce(ctx, c, st, faultjob.Producer{Jobs: o.produce, Batch: o.batch, Every: o.every,
			Committed: func(id string) { fmt.Println("committed", id) }})
	}
	workers := sluice.NewWorkers()
	w := &faultjob.Worker[TTx]{Store: st, Delay: o.work, Attempts: o.attempts}
	for _, topic := range strings.Split(o.topics, ",") {
		switch topic {
		case faultjob.Topic:
			sluice.AddWorker(workers, w)
		case faultjob.KeyedTopic:
			sluice.AddWorker(workers, &faultjob.KeyedWorker[TTx]{Worker: w})
		case faultjob.StepTopic:
			sluice.AddWorker(workers, &faultjob.StepWorker[TTx]{Worker: w})
		default:
			return fmt.Errorf("-topics: unknown topic %q", topic)
		}
	}
	queues := faultjob.Queues(0)
	for _, q := range strings.Split(o.queues, ",") {
		queues[q] = sluice.QueueConfig{MaxWorkers: o.workers}
	}
	cfg := &sluice.Config{
		Workers:       workers,
		Queues:        queues,
		ClientID:      faultjob.ClientID(os.Getpid()),
		LeaseDuration: o.lease,
		PollInterval:  o.poll,
		RetryPolicy:   sluice.SquareRetryPolicy{Unit: 10 * time.Millisecond},
		Logger:        logger,
	}
	if o.tick > 0 {
		cfg.PeriodicJobs = []sluice.PeriodicJob{faultjob.Periodic(o.tick)}
	}
	c, err := sluice.NewClient(d, cfg)
	if err != nil {
		return err
	}
	if o.tick > 0 {
		if err := faultjob.CreateStored(ctx, c, o.tick); err != nil {
			return err
		}
	}
	if err := c.Start(ctx); err != nil {
		return err
	}
	fmt.Println("ready")
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), o.stopTimeout)
	defer cancel()
	err = c.Stop(stopCtx)
	fmt.Println("stopped", err)
	return nil
}
