package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// One job at a time, without Start: WorkNext works the next due job and
// returns it as it is afterwards; a failure waits for its retry.
func ExampleClient_WorkNext() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[EmailArgs]) error {
		if job.Args.To == "" {
			return errors.New("no address")
		}
		return nil
	}))
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{Workers: workers, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	for _, to := range []string{"ada@example.com", ""} {
		if _, err := client.Enqueue(ctx, EmailArgs{To: to}, nil); err != nil {
			log.Fatal(err)
		}
	}
	for {
		job, err := client.WorkNext(ctx, sluice.QueueDefault)
		if err != nil {
			log.Fatal(err)
		}
		if job == nil {
			break // nothing due: the failed job's retry is a minute away
		}
		fmt.Println(job.Status, len(job.Errors))
	}
	// Output:
	// completed 0
	// pending 1
}
