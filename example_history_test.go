package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// A job's history: every attempt, when it ran, where, and how it ended.
func ExampleJobRow_History() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	done := make(chan struct{})
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[EmailArgs]) error {
		if job.Attempt == 1 {
			return errors.New("smtp is down")
		}
		close(done)
		return nil
	}))
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{
		Workers:     workers,
		RetryPolicy: sluice.SquareRetryPolicy{Unit: time.Millisecond}, // retry at once, for the example
		Logger:      quiet,
	})
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
	for _, a := range job.History() {
		outcome := "completed"
		if a.Error != "" {
			outcome = "failed: " + a.Error
		}
		known := a.ClientID != "" && !a.StartedAt.IsZero() && !a.EndedAt.Before(a.StartedAt)
		fmt.Printf("attempt %d: %s (client, start and end known: %t)\n", a.Attempt, outcome, known)
	}
	// Output:
	// attempt 1: failed: smtp is down (client, start and end known: true)
	// attempt 2: completed (client, start and end known: true)
}
