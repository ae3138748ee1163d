// Command quickstart shows sluice working jobs from a SQLite file, with no
// set-up: a job that runs at once, a delayed job, a job that fails once and
// then succeeds, and a job enqueued in a transaction that rolls back and so
// never runs.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// GreetArgs are the arguments of a greeting job.
type GreetArgs struct {
	Name string `json:"name"`
}

// Topic names the job type.
func (GreetArgs) Topic() string { return "greet" }

// GreetWorker greets; a name of "flaky" fails on the first attempt.
type GreetWorker struct {
	sluice.WorkerDefaults[GreetArgs]
	start time.Time
	done  *sync.WaitGroup
}

// RetryPolicy retries after half a second, so the demo stays short (the
// default waits 1, 4, 9 minutes).
func (w *GreetWorker) RetryPolicy() sluice.RetryPolicy {
	return sluice.SquareRetryPolicy{Unit: 500 * time.Millisecond}
}

// Work greets.
func (w *GreetWorker) Work(ctx context.Context, job *sluice.Job[GreetArgs]) error {
	elapsed := time.Since(w.start).Round(10 * time.Millisecond)
	if job.Args.Name == "flaky" && job.Attempt == 1 {
		fmt.Printf("%6s  attempt %d of %q fails\n", elapsed, job.Attempt, job.Args.Name)
		return errors.New("temporary failure")
	}
	fmt.Printf("%6s  hello, %s (attempt %d)\n", elapsed, job.Args.Name, job.Attempt)
	w.done.Done()
	return nil
}

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "sluice-quickstart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	db, err := sqlitedriver.Open(filepath.Join(dir, "jobs.db"))
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE signups (name TEXT)`); err != nil {
		return err
	}

	var done sync.WaitGroup
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, &GreetWorker{start: time.Now(), done: &done})
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{Workers: workers})
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}

	done.Add(3)
	ids := map[string]string{}
	enqueue := func(label string, args GreetArgs, opts *sluice.EnqueueOptions) error {
		res, err := client.Enqueue(ctx, args, opts)
		if err != nil {
			return err
		}
		ids[label] = res.Job.ID
		return nil
	}
	if err := enqueue("now", GreetArgs{Name: "world"}, nil); err != nil {
		return err
	}
	if err := enqueue("delayed 2s", GreetArgs{Name: "later"}, &sluice.EnqueueOptions{RunAt: time.Now().Add(2 * time.Second)}); err != nil {
		return err
	}
	if err := enqueue("fails once", GreetArgs{Name: "flaky"}, nil); err != nil {
		return err
	}
	rolledBack, err := enqueueAndRollBack(ctx, db, client)
	if err != nil {
		return err
	}
	ids["rolled back"] = rolledBack

	done.Wait()
	stopCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := client.Stop(stopCtx); err != nil {
		return err
	}
	fmt.Println()
	for _, label := range []string{"now", "delayed 2s", "fails once", "rolled back"} {
		job, err := client.Get(ctx, ids[label])
		if errors.Is(err, sluice.ErrNotFound) {
			fmt.Printf("%-12s never existed: its transaction rolled back\n", label)
			continue
		}
		if err != nil {
			return err
		}
		fmt.Printf("%-12s %s after %d attempt(s)\n", label, job.Status, job.Attempt)
	}
	return nil
}

// enqueueAndRollBack enqueues a job beside a business write in one
// transaction, then rolls back: neither the signup nor the job exists.
func enqueueAndRollBack(ctx context.Context, db *sql.DB, client *sluice.Client[*sql.Tx]) (string, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO signups (name) VALUES ('ghost')`); err != nil {
		return "", err
	}
	res, err := client.EnqueueTx(ctx, tx, GreetArgs{Name: "ghost"}, nil)
	if err != nil {
		return "", err
	}
	return res.Job.ID, tx.Rollback()
}
