package sluice_test

import (
	"context"
	"fmt"
	"log"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// Listing jobs page by page, newest first, and counting them by status.
func ExampleClient_List() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	for _, to := range []string{"ada@example.com", "bob@example.com", "cy@example.com"} {
		if _, err := client.Enqueue(ctx, EmailArgs{To: to}, nil); err != nil {
			log.Fatal(err)
		}
	}

	f := &sluice.ListFilter{
		JobFilter: sluice.JobFilter{Topics: []string{"mail_digest"}},
		Order:     sluice.NewestFirst,
		Limit:     2,
	}
	for {
		page, err := client.List(ctx, f)
		if err != nil {
			log.Fatal(err)
		}
		for _, job := range page.Jobs {
			fmt.Printf("%s of %d: %s\n", job.Status, page.Total, job.Payload)
		}
		if page.NextCursor == "" {
			break
		}
		f.Cursor = page.NextCursor
	}

	stats, err := client.Stats(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("pending:", stats.ByStatus[sluice.StatusPending])
	// Output:
	// pending of 3: {"to":"cy@example.com"}
	// pending of 3: {"to":"bob@example.com"}
	// pending of 3: {"to":"ada@example.com"}
	// pending: 3
}
