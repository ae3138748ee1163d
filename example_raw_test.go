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

// Enqueueing a job by its topic's name and a JSON payload, as an HTTP API
// or a command line does: the client checks the payload against its worker
// for the topic.
func ExampleRawArgs() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[EmailArgs]) error {
		return nil
	}))
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{Workers: workers, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}

	res, err := client.Enqueue(ctx, sluice.RawArgs{
		TopicName: "mail_digest",
		Payload:   json.RawMessage(`{ "to": "ada@example.com" }`),
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Job.Topic, string(res.Job.Payload))

	_, err = client.Enqueue(ctx, sluice.RawArgs{TopicName: "mail_digest", Payload: json.RawMessage(`{"too": "bob"}`)}, nil)
	fmt.Println(errors.Is(err, sluice.ErrInvalidArgs))
	_, err = client.Enqueue(ctx, sluice.RawArgs{TopicName: "mail_digets"}, nil)
	fmt.Println(errors.Is(err, sluice.ErrUnknownTopic))
	// Output:
	// mail_digest {"to":"ada@example.com"}
	// true
	// true
}

// A worker for a topic with no Go argument type, such as one whose jobs are
// handed to a script or another service: it receives each payload as JSON.
func ExampleAddRawWorker() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	done := make(chan struct{})
	workers := sluice.NewWorkers()
	sluice.AddRawWorker(workers, "thumbnail", sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[sluice.RawArgs]) error {
		fmt.Println(job.Args.TopicName, string(job.Args.Payload))
		close(done)
		return nil
	}))
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{Workers: workers, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	_, err = client.Enqueue(ctx, sluice.RawArgs{TopicName: "thumbnail", Payload: json.RawMessage(`{"image": "cat.png", "width": 64}`)}, nil)
	if err != nil {
		log.Fatal(err)
	}
	<-done
	if err := client.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// thumbnail {"image":"cat.png","width":64}
}
