package sluicetest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/sluicetest"
)

// ReminderArgs are the arguments of the examples' jobs.
type ReminderArgs struct {
	Note string `json:"note"`
}

func (ReminderArgs) Topic() string { return "reminder" }

// A clock the test moves fires a delayed job without waiting for it:
// WorkNext works the next due job, by the client's clock.
func ExampleClock() {
	dir, _ := os.MkdirTemp("", "sluicetest-example")
	defer os.RemoveAll(dir)
	db, _ := sqlitedriver.Open(filepath.Join(dir, "jobs.db"))
	defer db.Close()

	clock := sluicetest.NewClock(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(_ context.Context, job *sluice.Job[ReminderArgs]) error {
		fmt.Println("reminder:", job.Args.Note, "at", clock.Now().Format(time.Kitchen))
		return nil
	}))
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{Workers: workers, Clock: clock.Now})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	_, _ = client.Enqueue(ctx, ReminderArgs{Note: "stand up"}, &sluice.EnqueueOptions{RunAt: clock.Now().Add(time.Hour)})

	job, _ := client.WorkNext(ctx, sluice.QueueDefault)
	fmt.Println("due at 9AM:", job != nil)
	clock.Advance(time.Hour)
	job, _ = client.WorkNext(ctx, sluice.QueueDefault)
	fmt.Println(job.Status)
	// Output:
	// due at 9AM: false
	// reminder: stand up at 10:00AM
	// completed
}

// A test of code that enqueues checks the job by its arguments' type, and
// reads its arguments back. (user_test.go in this package is a whole file
// of such tests.)
func ExampleRequireEnqueued() {
	testRemind := func(t *testing.T) {
		client, err := sluice.NewClient(sluicetest.NewMemoryDriver(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		// The code under test enqueues.
		if _, err := client.Enqueue(t.Context(), ReminderArgs{Note: "stand up"}, &sluice.EnqueueOptions{Tags: []string{"daily"}}); err != nil {
			t.Fatal(err)
		}

		job := sluicetest.RequireEnqueued[ReminderArgs](t, client, &sluicetest.RequireOpts{Tags: []string{"daily"}})
		if job.Args.Note != "stand up" {
			t.Errorf("note %q", job.Args.Note)
		}
		sluicetest.RequireNotEnqueued[ReminderArgs](t, client, &sluicetest.RequireOpts{Queue: "urgent"})
	}
	_ = testRemind
}

// A test of a worker runs one job through it and looks at the outcome.
func ExampleWork() {
	testReminderWorker := func(t *testing.T) {
		workers := sluice.NewWorkers()
		sluice.AddWorker(workers, sluice.WorkFunc(func(_ context.Context, job *sluice.Job[ReminderArgs]) error {
			if job.Args.Note == "" {
				return sluice.Cancel(fmt.Errorf("nothing to remind"))
			}
			return nil
		}))
		client, err := sluice.NewClient(sluicetest.NewMemoryDriver(t), &sluice.Config{Workers: workers})
		if err != nil {
			t.Fatal(err)
		}

		if row := sluicetest.Work(t, client, ReminderArgs{}, nil); row.Status != sluice.StatusCancelled {
			t.Errorf("an empty reminder is %s, want cancelled", row.Status)
		}
	}
	_ = testReminderWorker
}
