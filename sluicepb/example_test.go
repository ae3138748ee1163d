package sluicepb_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/pocketbase/pocketbase/core"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluicepb"
)

// WelcomeArgs are the arguments of a welcome mail job.
type WelcomeArgs struct {
	User string `json:"user"`
}

// Topic implements sluice.JobArgs.
func (WelcomeArgs) Topic() string { return "welcome" }

// Register a queue in a PocketBase app, and enqueue a job in the
// transaction that creates a record: a rollback takes both away.
func ExampleRegister() {
	dir, err := os.MkdirTemp("", "sluicepb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	app := core.NewBaseApp(core.BaseAppConfig{DataDir: dir}) // pocketbase.New() in an app
	jobs, err := sluicepb.Register(app, nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := app.Bootstrap(); err != nil { // app.Start() does this
		log.Fatal(err)
	}
	defer app.ResetBootstrapState()
	if err := app.RunAllMigrations(); err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	signUp := func(email string, fail bool) error {
		return app.RunInTransaction(func(txApp core.App) error {
			users, err := txApp.FindCollectionByNameOrId("users")
			if err != nil {
				return err
			}
			user := core.NewRecord(users)
			user.SetEmail(email)
			user.SetPassword("a long password")
			if err := txApp.Save(user); err != nil {
				return err
			}
			if _, err := jobs.EnqueueTx(ctx, txApp, WelcomeArgs{User: user.Id}, nil); err != nil {
				return err
			}
			if fail {
				return errors.New("sign-up declined")
			}
			return nil
		})
	}
	fmt.Println(signUp("ada@example.com", false))
	fmt.Println(signUp("bob@example.com", true))

	client, err := jobs.Client()
	if err != nil {
		log.Fatal(err)
	}
	list, err := client.List(ctx, &sluice.ListFilter{})
	if err != nil {
		log.Fatal(err)
	}
	users, _ := app.CountRecords("users")
	fmt.Println(len(list.Jobs), "job,", users, "user")
	// Output:
	// <nil>
	// sign-up declined
	// 1 job, 1 user
}

// Enqueue a job with every record created in a collection, in the
// record's own transaction, however the record is created.
func ExampleEnqueueOnCreate() {
	dir, err := os.MkdirTemp("", "sluicepb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	app := core.NewBaseApp(core.BaseAppConfig{DataDir: dir})
	jobs, err := sluicepb.Register(app, nil)
	if err != nil {
		log.Fatal(err)
	}
	sluicepb.EnqueueOnCreate(jobs, "users", func(e *core.RecordEvent) (sluice.JobArgs, *sluice.EnqueueOptions, error) {
		return WelcomeArgs{User: e.Record.Id}, nil, nil
	})
	if err := app.Bootstrap(); err != nil {
		log.Fatal(err)
	}
	defer app.ResetBootstrapState()
	if err := app.RunAllMigrations(); err != nil {
		log.Fatal(err)
	}

	users, err := app.FindCollectionByNameOrId("users")
	if err != nil {
		log.Fatal(err)
	}
	user := core.NewRecord(users)
	user.SetEmail("ada@example.com")
	user.SetPassword("a long password")
	if err := app.Save(user); err != nil {
		log.Fatal(err)
	}
	client, err := jobs.Client()
	if err != nil {
		log.Fatal(err)
	}
	list, err := client.List(context.Background(), &sluice.ListFilter{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(list.Jobs[0].Topic, string(list.Jobs[0].Payload) == `{"user":"`+user.Id+`"}`)
	// Output: welcome true
}
