package sluice_test

import (
	"context"
	"fmt"
	"log"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// A worker leaves a result on the job it completes.
func ExampleSetResult() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	done := make(chan struct{})
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[EmailArgs]) error {
		defer close(done)
		return sluice.SetResult(ctx, map[string]string{"message_id": "42@example.com"})
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
	if err := client.Stop(ctx); err != nil { // Stop writes the outcome
		log.Fatal(err)
	}
	job, err := client.Get(ctx, res.Job.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.Status, string(job.Result))
	// Output:
	// completed {"message_id":"42@example.com"}
}
