package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// Completed jobs kept for an hour, failed ones for good.
func ExampleRetention() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	// A clock the example moves forward, instead of waiting an hour.
	var skew atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }

	done := make(chan struct{})
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[EmailArgs]) error {
		close(done)
		return nil
	}))
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{
		Workers: workers,
		Logger:  quiet,
		Clock:   clock,
		Retention: sluice.Retention{
			Completed: time.Hour,
			Failed:    sluice.KeepForever,
			Interval:  10 * time.Millisecond, // the default is a minute
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	res, err := client.Enqueue(ctx, EmailArgs{To: "ada@example.com"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	<-done
	for job, _ := client.Get(ctx, res.Job.ID); job.Status != sluice.StatusCompleted; job, _ = client.Get(ctx, res.Job.ID) {
		time.Sleep(10 * time.Millisecond) // the outcome is written just after the worker returns
	}

	skew.Store(int64(2 * time.Hour))
	for {
		_, err := client.Get(ctx, res.Job.ID)
		if errors.Is(err, sluice.ErrNotFound) {
			fmt.Println("deleted two hours after it completed")
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Output:
	// deleted two hours after it completed
}
