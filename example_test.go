package sluice_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// EmailArgs are the arguments of the examples' jobs.
type EmailArgs struct {
	To string `json:"to"`
}

func (EmailArgs) Topic() string { return "mail_digest" }

// exampleDB opens a SQLite file in a fresh directory; cleanup removes it.
func exampleDB() (db *sql.DB, cleanup func()) {
	dir, err := os.MkdirTemp("", "sluice-example-")
	if err != nil {
		log.Fatal(err)
	}
	db, err = sqlitedriver.Open(filepath.Join(dir, "jobs.db"))
	if err != nil {
		log.Fatal(err)
	}
	return db, func() { db.Close(); os.RemoveAll(dir) }
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// A worker, a client, and a job enqueued and worked.
func Example() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	done := make(chan struct{})
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[EmailArgs]) error {
		fmt.Println("sending digest to", job.Args.To)
		close(done)
		return nil
	}))
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{Workers: workers, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	res, err := client.Enqueue(ctx, EmailArgs{To: "ada@example.com"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	<-done
	if err := client.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	job, err := client.Get(ctx, res.Job.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.Topic, job.Status)
	// Output:
	// sending digest to ada@example.com
	// mail_digest completed
}

// A job enqueued in a transaction exists only if the transaction commits.
func ExampleClient_EnqueueTx() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	enqueue := func(commit bool) string {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			log.Fatal(err)
		}
		// ... the business writes go here, in tx ...
		res, err := client.EnqueueTx(ctx, tx, EmailArgs{To: "ada@example.com"}, nil)
		if err != nil {
			log.Fatal(err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			log.Fatal(err)
		}
		return res.Job.ID
	}
	for _, commit := range []bool{true, false} {
		_, err := client.Get(ctx, enqueue(commit))
		fmt.Printf("commit=%t: job exists: %t\n", commit, !errors.Is(err, sluice.ErrNotFound))
	}
	// Output:
	// commit=true: job exists: true
	// commit=false: job exists: false
}

// A worker records its business write and completes its job in one
// transaction.
func ExampleClient_Ack() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()
	if _, err := db.Exec(`CREATE TABLE sent (email TEXT)`); err != nil {
		log.Fatal(err)
	}
	done := make(chan struct{})
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[EmailArgs]) error {
		defer close(done)
		client := sluice.ClientFromContext[*sql.Tx](ctx)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, `INSERT INTO sent (email) VALUES (?)`, job.Args.To); err != nil {
			return err
		}
		if err := client.AckWithResult(ctx, tx, job, map[string]string{"message_id": "42"}); err != nil {
			return err // sluice.ErrLeaseLost: roll back, the job is not ours
		}
		return tx.Commit()
	}))
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{Workers: workers, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	res, err := client.Enqueue(ctx, EmailArgs{To: "ada@example.com"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	<-done
	if err := client.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	job, err := client.Get(ctx, res.Job.ID)
	if err != nil {
		log.Fatal(err)
	}
	var sent int
	if err := db.QueryRow(`SELECT count(*) FROM sent`).Scan(&sent); err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.Status, string(job.Result), "rows sent:", sent)
	// Output:
	// completed {"message_id":"42"} rows sent: 1
}

// A job that fails is retried per the retry policy. Snooze runs it again
// later without spending a retry: the attempt counts, and the job gets one
// more retry in exchange.
func ExampleSnooze() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()
	done := make(chan struct{})
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[EmailArgs]) error {
		switch {
		case len(job.Errors) == 0 && job.RunAt.Equal(job.CreatedAt):
			fmt.Println("rate limited: snoozing")
			return sluice.Snooze(10 * time.Millisecond)
		case len(job.Errors) == 0:
			fmt.Println("attempt", job.Attempt, "fails")
			return errors.New("smtp timeout")
		default:
			fmt.Println("attempt", job.Attempt, "of", job.MaxRetries+1, "succeeds after:", job.Errors[0].Error)
			close(done)
			return nil
		}
	}))
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{
		Workers:     workers,
		Logger:      quiet,
		RetryPolicy: sluice.SquareRetryPolicy{Unit: 10 * time.Millisecond},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	if _, err := client.Enqueue(ctx, EmailArgs{To: "ada@example.com"}, nil); err != nil {
		log.Fatal(err)
	}
	<-done
	if err := client.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// rate limited: snoozing
	// attempt 2 fails
	// attempt 3 of 5 succeeds after: smtp timeout
}
