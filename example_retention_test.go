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

// PingArgs are the arguments of a job nobody needs to see once it has
// completed.
type PingArgs struct{}

func (PingArgs) Topic() string { return "ping" }

// Retention per topic: ping jobs are deleted as they complete, in the
// statement that records their outcome; the others are kept a day.
func ExampleKeep() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[PingArgs]) error { return nil }))
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{
		Workers: workers,
		Logger:  quiet,
		Retention: sluice.Retention{
			Topics: map[string]sluice.Keep{"ping": {Completed: sluice.KeepNone}},
			Queues: map[string]sluice.Keep{"audit": {Completed: sluice.KeepForever}}, // for jobs of other topics
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	sub := client.Subscribe(sluice.EventCompleted)
	defer sub.Close()
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	res, err := client.Enqueue(ctx, PingArgs{}, nil)
	if err != nil {
		log.Fatal(err)
	}
	ev := <-sub.C // sent once the outcome is written
	_, err = client.Get(ctx, res.Job.ID)
	fmt.Println(ev.Kind, errors.Is(err, sluice.ErrNotFound))
	// Output:
	// completed true
}
