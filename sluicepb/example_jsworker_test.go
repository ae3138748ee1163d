package sluicepb_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/plugins/jsvm"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluicepb"
)

// A worker written in JavaScript, in pb_hooks: a throw retries the job
// with its message recorded, and the value returned is the job's result.
func ExampleJobs_JSConfig() {
	dir, err := os.MkdirTemp("", "sluicepb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	hooks := filepath.Join(dir, "pb_hooks")
	if err := os.Mkdir(hooks, 0o755); err != nil {
		log.Fatal(err)
	}
	err = os.WriteFile(filepath.Join(hooks, "greet.pb.js"), []byte(`
		$jobs.work("greet", (job) => {
			if (job.attempt === 1) {
				throw new Error("not yet");
			}
			return "hello, " + job.payload.name;
		});
	`), 0o644)
	if err != nil {
		log.Fatal(err)
	}

	app := core.NewBaseApp(core.BaseAppConfig{DataDir: filepath.Join(dir, "pb_data")}) // pocketbase.New() in an app
	jobs, err := sluicepb.Register(app, &sluicepb.Config{
		Sluice: &sluice.Config{RetryPolicy: sluice.SquareRetryPolicy{Unit: time.Millisecond}}, // retry at once, for the example
	})
	if err != nil {
		log.Fatal(err)
	}
	jsvm.MustRegister(app, jobs.JSConfig(jsvm.Config{HooksDir: hooks}, nil))
	if err := app.Bootstrap(); err != nil {
		log.Fatal(err)
	}
	defer app.ResetBootstrapState()

	ctx := context.Background()
	client, err := jobs.Client()
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil { // the app starts the workers when it serves
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	done := client.Subscribe(sluice.EventCompleted, sluice.EventFailed)
	defer done.Close()

	_, err = jobs.Enqueue(ctx, sluice.RawArgs{TopicName: "greet", Payload: json.RawMessage(`{"name": "ada"}`)}, nil)
	if err != nil {
		log.Fatal(err)
	}
	ev := <-done.C
	job, err := client.Get(ctx, ev.Job.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.Status, string(job.Result), "after:", job.Errors[0].Error)
	// Output:
	// completed "hello, ada" after: not yet
}
