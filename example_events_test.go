package sluice_test

import (
	"context"
	"fmt"
	"log"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// Watching a job's life from the same process.
func ExampleClient_Subscribe() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[EmailArgs]) error {
		return nil
	}))
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{Workers: workers, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	events := client.Subscribe() // every kind
	defer events.Close()
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	if _, err := client.Enqueue(ctx, EmailArgs{To: "ada@example.com"}, nil); err != nil {
		log.Fatal(err)
	}
	for ev := range events.C {
		fmt.Println(ev.Kind, ev.Job.Topic)
		if ev.Kind == sluice.EventCompleted {
			break
		}
	}
	// Output:
	// enqueued mail_digest
	// started mail_digest
	// completed mail_digest
}
