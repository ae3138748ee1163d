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
