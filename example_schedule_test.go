package sluice_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// A periodic job declared in code: a report every Monday at 9:00 in Paris,
// and once at start, since none ran for its latest Monday. However many
// processes run this Config, each tick enqueues one job.
func ExamplePeriodicJob() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	done := make(chan struct{})
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[EmailArgs]) error {
		fmt.Println("weekly report to", job.Args.To)
		close(done)
		return nil
	}))
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{
		Workers: workers,
		Logger:  quiet,
		PeriodicJobs: []sluice.PeriodicJob{{
			Name:       "weekly-report",
			Cron:       "0 9 * * MON",
			TimeZone:   "Europe/Paris",
			Args:       EmailArgs{To: "ops@example.com"},
			RunOnStart: true,
		}},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	<-done
	// Output:
	// weekly report to ops@example.com
}

// A stored schedule, created (and changed, listed, deleted) while clients
// run: a digest every day at 9:00 in Paris.
func ExampleClient_CreateSchedule() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	// A clock that starts on May 4th, 2026 at 8:30 in Paris and that the
	// example moves forward, instead of waiting half an hour.
	paris, _ := time.LoadLocation("Europe/Paris")
	base, started := time.Date(2026, 5, 4, 8, 30, 0, 0, paris), time.Now()
	var skew atomic.Int64
	clock := func() time.Time { return base.Add(time.Since(started) + time.Duration(skew.Load())) }

	done := make(chan struct{})
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[EmailArgs]) error {
		fmt.Println("digest to", job.Args.To)
		close(done)
		return nil
	}))
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{
		Workers: workers, Logger: quiet, Clock: clock, PollInterval: 10 * time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)

	s, err := client.CreateSchedule(ctx, &sluice.Schedule{
		Name:     "daily-digest",
		Cron:     "0 9 * * *",
		TimeZone: "Europe/Paris",
		Topic:    EmailArgs{}.Topic(),
		Payload:  json.RawMessage(`{"to": "team@example.com"}`),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("next run:", s.NextRunAt.In(paris).Format(time.DateTime))

	skew.Store(int64(31 * time.Minute))
	<-done
	s, err = client.GetSchedule(ctx, "daily-digest")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("last run:", s.LastRunAt.In(paris).Format(time.DateTime))
	fmt.Println("next run:", s.NextRunAt.In(paris).Format(time.DateTime))
	// Output:
	// next run: 2026-05-04 09:00:00
	// digest to team@example.com
	// last run: 2026-05-04 09:00:00
	// next run: 2026-05-05 09:00:00
}
