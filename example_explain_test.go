package sluice_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// Asking why jobs are not running.
func ExampleClient_Explain() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	later, err := client.Enqueue(ctx, EmailArgs{To: "ada@example.com"},
		&sluice.EnqueueOptions{RunAt: time.Now().Add(time.Hour)})
	if err != nil {
		log.Fatal(err)
	}
	now, err := client.Enqueue(ctx, EmailArgs{To: "bob@example.com"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, id := range []string{later.Job.ID, now.Job.ID} {
		ex, err := client.Explain(ctx, id)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(ex.Reason)
	}
	// Output:
	// scheduled
	// no_worker
}
