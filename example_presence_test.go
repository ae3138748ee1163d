package sluice_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// Which clients are working, and on what.
func ExampleClient_Clients() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	client := startedClient(ctx, db)
	// Start records the client before it works any job.
	infos, err := client.Clients(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, info := range infos {
		fmt.Println(info.Topics, info.Queues, info.MaxWorkers, info.SeenAt.Sub(info.StartedAt) >= 0)
	}
	if err := client.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	infos, err = client.Clients(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(infos), "after Stop")
	// Output:
	// [mail_digest] [default] map[default:10] true
	// 0 after Stop
}

// startedClient returns a started client over db whose worker does nothing
// with mail_digest jobs.
func startedClient(ctx context.Context, db *sql.DB) *sluice.Client[*sql.Tx] {
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[EmailArgs]) error {
		return nil
	}))
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{Workers: workers, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	return client
}
