package sluice_test

import (
	"context"
	"fmt"
	"log"

	"github.com/sluicehq/sluice"
)

// Watching a job's life from the same process.
func ExampleClient_Subscribe() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	client := startedClient(ctx, db)
	defer client.Stop(ctx)
	events := client.Subscribe() // every kind
	defer events.Close()
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
