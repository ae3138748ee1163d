package sluice_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// A worker reports how far it got; the client stores it at a bounded rate.
func ExampleReportProgress() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	stored := make(chan struct{})
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[EmailArgs]) error {
		if err := sluice.ReportProgress(ctx, 50, "digest rendered"); err != nil {
			return err
		}
		<-stored // for the example only: a worker just carries on
		return nil
	}))
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{
		Workers:          workers,
		ProgressInterval: 10 * time.Millisecond, // default 1 s
		Logger:           quiet,
	})
	if err != nil {
		log.Fatal(err)
	}
	events := client.Subscribe(sluice.EventProgressed)
	defer events.Close()
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	res, err := client.Enqueue(ctx, EmailArgs{To: "ada@example.com"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	ev := <-events.C
	fmt.Printf("%s %.0f%%: %s\n", ev.Kind, ev.Job.Progress.Percent, ev.Job.Progress.Message)
	close(stored)
	if err := client.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	job, err := client.Get(ctx, res.Job.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s, progress kept: %.0f%%: %s\n", job.Status, job.Progress.Percent, job.Progress.Message)
	// Output:
	// progressed 50%: digest rendered
	// completed, progress kept: 50%: digest rendered
}
