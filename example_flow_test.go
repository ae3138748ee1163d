package sluice_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// StepArgs are the arguments of one step of a maintenance chain.
type StepArgs struct {
	Step string `json:"step"`
}

func (StepArgs) Topic() string { return "maintenance_step" }

// A chain of jobs, backup → check → compact: each waits until the one
// before has completed. Had the backup failed for good, the check and then
// the compaction would have been cancelled.
func ExampleEnqueueOptions_dependsOn() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	done := make(chan struct{})
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[StepArgs]) error {
		fmt.Println(job.Args.Step)
		if job.Args.Step == "compact" {
			close(done)
		}
		return nil
	}))
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{
		Workers: workers, Logger: quiet, PollInterval: 10 * time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}
	backup, err := client.Enqueue(ctx, StepArgs{Step: "backup"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	checked, err := client.Enqueue(ctx, StepArgs{Step: "check"}, &sluice.EnqueueOptions{DependsOn: []string{backup.Job.ID}})
	if err != nil {
		log.Fatal(err)
	}
	_, err = client.Enqueue(ctx, StepArgs{Step: "compact"}, &sluice.EnqueueOptions{
		DependsOn:           []string{checked.Job.ID},
		OnDependencyFailure: sluice.DependencyCancel, // the default
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("check waiting:", checked.Job.Waiting)
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	<-done
	// Output:
	// check waiting: true
	// backup
	// check
	// compact
}

// Pausing a queue and limiting it, for every process on the database.
func ExampleClient_PauseQueue() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	// No client starts a job of the queue until it is resumed.
	if _, err := client.PauseQueue(ctx, sluice.QueueDefault); err != nil {
		log.Fatal(err)
	}
	// At most 5 of its jobs run at once, and at most 100 start a minute,
	// across every client, whatever each one's MaxWorkers.
	st, err := client.SetQueueLimits(ctx, sluice.QueueDefault, sluice.QueueLimits{
		MaxRunning: 5, RateLimit: 100, RatePeriod: time.Minute,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(st.Queue, "paused:", st.Paused, "max running:", st.MaxRunning, "rate:", st.RateLimit, "per", st.RatePeriod)
	st, err = client.ResumeQueue(ctx, sluice.QueueDefault)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(st.Queue, "paused:", st.Paused)
	// Output:
	// default paused: true max running: 5 rate: 100 per 1m0s
	// default paused: false
}
