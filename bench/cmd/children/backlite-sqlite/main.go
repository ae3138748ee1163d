// Command backlite-sqlite is backlite on SQLite for the comparison program,
// which builds it and runs it as a child process. It links backlite and
// modernc.org/sqlite and no other system or database library, so the
// memory the comparison reads from it is backlite's alone.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"time"

	"github.com/mikestefanello/backlite"
	_ "modernc.org/sqlite"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/bench/internal/sqldb"
)

var factories = map[string]harness.Factory{"backlite/sqlite": newSystem}

func main() {
	harness.Exit(harness.ChildMain(context.Background(), os.Args[1:], os.Stdout, factories))
}

// task is the backlite benchmark task.
type task struct {
	N int64
}

// Config puts the tasks in one queue with the retries sluice's default
// gives (four attempts) and nothing retained once done: backlite's default.
func (task) Config() backlite.QueueConfig {
	return backlite.QueueConfig{Name: "bench", MaxAttempts: 4, Backoff: time.Second}
}

// backlite's settings: its README's example client (10 workers, tasks
// released after 10 minutes, cleanup every hour), and for throughput a
// worker pool ten times as large, since every fetch reads and sorts the
// waiting tasks and a larger pool takes more of them per fetch.
const (
	backliteWorkers      = 10
	backliteTunedWorkers = 100
	backliteReleaseAfter = 10 * time.Minute
)

type system struct {
	db     *sql.DB
	client *backlite.Client
	// cancel ends the context the dispatcher was started with.
	cancel context.CancelFunc
}

// backliteStopGrace is how long Stop waits for backlite's graceful stop
// before ending the dispatcher's context. backlite's Stop waits for every
// worker's token to come back, and now and then one never does (seen in
// about one quick run in ten), so it would wait out any deadline.
const backliteStopGrace = 2 * time.Second

// newSystem opens the database as backlite's README does: sql.Open with
// the default pool.
func newSystem(_ context.Context, spec *harness.Spec) (harness.System, error) {
	db, err := sql.Open("sqlite", harness.SQLiteDSN(spec.DB))
	if err != nil {
		return nil, err
	}
	return &system{db: db}, nil
}

func (s *system) Migrate(context.Context) error {
	c, err := backlite.NewClient(backlite.ClientConfig{DB: s.db, NumWorkers: 1, ReleaseAfter: backliteReleaseAfter})
	if err != nil {
		return err
	}
	return c.Install()
}

// InsertFinished keeps n tasks in backlite's table of completed tasks, as
// its Retention option would: backlite deletes a task from its queue table
// when it succeeds.
func (s *system) InsertFinished(ctx context.Context, n int) error {
	return sqldb.Exec(s.db)(ctx, `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?)
		INSERT INTO backlite_tasks_completed
		(id, created_at, queue, last_executed_at, attempts, last_duration_micro, succeeded, task)
		SELECT printf('00000000-0000-7000-8000-%012x', n), t, 'bench', t, 1, 10, 1, CAST(json_object('N', -n) AS BLOB)
		FROM g, (SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER) AS t)`, n)
}

func (s *system) Open(_ context.Context, tuned bool, work func(int64)) error {
	workers := backliteWorkers
	if tuned {
		workers = backliteTunedWorkers
	}
	c, err := backlite.NewClient(backlite.ClientConfig{
		DB:              s.db,
		NumWorkers:      workers,
		ReleaseAfter:    backliteReleaseAfter,
		CleanupInterval: time.Hour,
	})
	if err != nil {
		return err
	}
	c.Register(backlite.NewQueue(func(_ context.Context, t task) error {
		if work != nil {
			work(t.N)
		}
		return nil
	}))
	s.client = c
	return nil
}

// Start runs the dispatcher until Stop: backlite stops it hard when the
// context given to Start ends.
func (s *system) Start(context.Context) error {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.client.Start(ctx)
	return nil
}

// Stop stops the dispatcher gracefully, or after backliteStopGrace hard;
// the figures count finished tasks from the database either way.
func (s *system) Stop(ctx context.Context) error {
	defer s.cancel()
	grace, cancel := context.WithTimeout(ctx, backliteStopGrace)
	defer cancel()
	if !s.client.Stop(grace) {
		if err := ctx.Err(); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "# backlite: Stop did not return within %s; stopped hard\n", backliteStopGrace)
	}
	return nil
}

func (s *system) Enqueue(ctx context.Context, n int64) error {
	_, err := s.client.Add(task{N: n}).Ctx(ctx).Save()
	return err
}

func (s *system) EnqueueMany(ctx context.Context, first int64, size int) error {
	tasks := make([]backlite.Task, size)
	for i := range tasks {
		tasks[i] = task{N: first + int64(i)}
	}
	_, err := s.client.Add(tasks...).Ctx(ctx).Save()
	return err
}

func (s *system) Remaining(ctx context.Context) (int64, error) {
	return sqldb.Count(s.db)(ctx, `SELECT count(*) FROM backlite_tasks`)
}

func (s *system) Close() error { return s.db.Close() }
