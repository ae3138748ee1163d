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

// Cancelling a scheduled job, requeueing it, and what an action refuses.
func ExampleClient_Cancel() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	res, err := client.Enqueue(ctx, EmailArgs{To: "ada@example.com"},
		&sluice.EnqueueOptions{RunAt: time.Now().Add(time.Hour)})
	if err != nil {
		log.Fatal(err)
	}
	job, err := client.Cancel(ctx, res.Job.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.Status)

	_, err = client.Cancel(ctx, res.Job.ID)
	fmt.Println(errors.Is(err, sluice.ErrStatusConflict))

	job, err = client.Requeue(ctx, res.Job.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.Status, job.Errors[len(job.Errors)-1].Error)

	deleted, err := client.DeleteMany(ctx, &sluice.JobFilter{Topics: []string{"mail_digest"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("deleted", len(deleted))
	// Output:
	// cancelled
	// true
	// pending requeued
	// deleted 1
}
