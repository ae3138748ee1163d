package sluice_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// A worker logs through sluice.Logger; the records stay with the job.
func ExampleLogger() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[EmailArgs]) error {
		log := sluice.Logger(ctx)
		log.Info("rendering digest", "to", job.Args.To)
		log.Warn("one item skipped", "item", 42)
		return nil
	}))
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{Workers: workers, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	done := client.Subscribe(sluice.EventCompleted)
	defer done.Close()
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	res, err := client.Enqueue(ctx, EmailArgs{To: "ada@example.com"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	<-done.C
	if err := client.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	job, err := client.Get(ctx, res.Job.ID)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range job.Logs {
		fmt.Printf("attempt %d %s %s %s\n", r.Attempt, r.Level, r.Message, r.Attrs)
	}
	// Output:
	// attempt 1 INFO rendering digest {"to":"ada@example.com"}
	// attempt 1 WARN one item skipped {"item":42}
}

// Middleware wraps every job's work (and every enqueue): here one that
// times jobs and an enqueue middleware that stamps who asked.
func ExampleWorkMiddleware() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	timing := sluice.WorkMiddlewareFunc(func(ctx context.Context, job *sluice.JobRow, next func(context.Context) error) error {
		err := next(ctx)
		fmt.Printf("worked %s attempt %d: err=%v\n", job.Topic, job.Attempt, err)
		return err
	})
	stamp := sluice.EnqueueMiddlewareFunc(func(ctx context.Context, jobs []*sluice.EnqueueJob,
		next func(context.Context) ([]sluice.EnqueueResult, error)) ([]sluice.EnqueueResult, error) {
		for _, j := range jobs {
			if j.Topic == "forbidden" {
				return nil, errors.New("not allowed")
			}
			if j.Options.Metadata == nil {
				j.Options.Metadata = map[string]any{}
			}
			j.Options.Metadata["requested_by"] = "admin"
		}
		return next(ctx)
	})
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[EmailArgs]) error {
		return nil
	}))
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{Workers: workers, Logger: quiet,
		WorkMiddleware:    []sluice.WorkMiddleware{timing},
		EnqueueMiddleware: []sluice.EnqueueMiddleware{stamp}})
	if err != nil {
		log.Fatal(err)
	}
	done := client.Subscribe(sluice.EventCompleted)
	defer done.Close()
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	res, err := client.Enqueue(ctx, EmailArgs{To: "ada@example.com"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	<-done.C
	if err := client.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(res.Job.Metadata))
	// Output:
	// worked mail_digest attempt 1: err=<nil>
	// {"requested_by":"admin"}
}

// Tags and metadata label a job; a list selects by them.
func ExampleEnqueueOptions_tags() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	for _, tenant := range []string{"acme", "globex"} {
		_, err := client.Enqueue(ctx, EmailArgs{To: "ops@" + tenant + ".example"}, &sluice.EnqueueOptions{
			Tags:     []string{"digest", "tenant:" + tenant},
			Metadata: map[string]any{"tenant": tenant, "plan": "pro"},
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	page, err := client.List(ctx, &sluice.ListFilter{JobFilter: sluice.JobFilter{
		Tags:     []string{"digest"},
		Metadata: map[string]string{"tenant": "acme"},
	}})
	if err != nil {
		log.Fatal(err)
	}
	var meta struct{ Tenant, Plan string }
	if err := json.Unmarshal(page.Jobs[0].Metadata, &meta); err != nil {
		log.Fatal(err)
	}
	fmt.Println(page.Total, page.Jobs[0].Tags, meta.Tenant, meta.Plan)
	// Output:
	// 1 [digest tenant:acme] acme pro
}
