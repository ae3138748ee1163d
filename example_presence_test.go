package sluice_test

import (
	"context"
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
	// A started client records itself at once; wait for the record.
	var infos []*sluice.ClientInfo
	for len(infos) == 0 {
		if infos, err = client.Clients(ctx); err != nil {
			log.Fatal(err)
		}
	}
	for _, info := range infos {
		fmt.Println(info.Topics, info.Queues, info.SeenAt.Sub(info.StartedAt) >= 0)
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
	// [mail_digest] [default] true
	// 0 after Stop
}
