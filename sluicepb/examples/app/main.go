// Command app is a PocketBase app with a job queue: creating an order
// enqueues its charge in the same transaction, and a worker charges it,
// marking the order charged in the transaction that completes the job.
// Then pb_hooks/receipts.pb.js takes over in JavaScript: the order's
// update to charged enqueues a receipt job, and a JavaScript worker writes
// the receipt, completing its job in the same transaction.
//
//	go run . serve
//
// then open http://127.0.0.1:8090/_/ (create the first superuser when
// asked): the Jobs panel is in the header. Create an order in the admin
// UI, or as a user over the API:
//
//	curl -X POST http://127.0.0.1:8090/api/collections/orders/records \
//	  -H "Authorization: $TOKEN" -H 'Content-Type: application/json' \
//	  -d '{"amount": 42}'
package main

import (
	"context"
	"errors"
	"log"

	"github.com/pocketbase/pocketbase"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/plugins/jsvm"
	"github.com/pocketbase/pocketbase/tools/types"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluicepb"
)

// ChargeArgs are the arguments of a charge job.
type ChargeArgs struct {
	Order  string `json:"order"`
	Amount int    `json:"amount"`
}

// Topic implements sluice.JobArgs.
func (ChargeArgs) Topic() string { return "charge" }

func main() {
	app := pocketbase.New()
	jobs, err := sluicepb.Register(app, &sluicepb.Config{
		// Signed-in users may enqueue charges of at most 1000 over
		// /api/jobs/enqueue; only superusers may read and manage jobs.
		EnqueueRule:   `@request.auth.id != "" && payload.amount <= 1000`,
		AllowedTopics: []string{"charge"},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := sluicepb.AddWorker(jobs, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[ChargeArgs]) error {
		return charge(ctx, app, jobs, job)
	})); err != nil {
		log.Fatal(err)
	}
	sluicepb.EnqueueOnCreate(jobs, "orders", func(e *core.RecordEvent) (sluice.JobArgs, *sluice.EnqueueOptions, error) {
		return ChargeArgs{Order: e.Record.Id, Amount: e.Record.GetInt("amount")}, nil, nil
	})
	// $jobs in pb_hooks (next to pb_data), and the JavaScript workers it
	// registers.
	jsvm.MustRegister(app, jobs.JSConfig(jsvm.Config{}, nil))
	app.OnServe().BindFunc(func(e *core.ServeEvent) error {
		if err := ensureOrders(e.App); err != nil {
			return err
		}
		return e.Next()
	})
	if err := app.Start(); err != nil {
		log.Fatal(err)
	}
}

// charge charges an order (here: marks it charged) and completes the job
// in the same transaction.
func charge(ctx context.Context, app core.App, jobs *sluicepb.Jobs, job *sluice.Job[ChargeArgs]) error {
	if job.Args.Amount <= 0 {
		return sluice.Cancel(errors.New("nothing to charge"))
	}
	return app.RunInTransaction(func(txApp core.App) error {
		order, err := txApp.FindRecordById("orders", job.Args.Order)
		if err != nil {
			return err
		}
		order.Set("status", "charged")
		if err := txApp.Save(order); err != nil {
			return err
		}
		return jobs.Ack(ctx, txApp, job)
	})
}

// ensureOrders creates the orders collection if it does not exist.
func ensureOrders(app core.App) error {
	if _, err := app.FindCollectionByNameOrId("orders"); err == nil {
		return nil
	}
	orders := core.NewBaseCollection("orders")
	orders.Fields.Add(
		&core.NumberField{Name: "amount", Required: true},
		&core.SelectField{Name: "status", Values: []string{"new", "charged"}, MaxSelect: 1},
		&core.TextField{Name: "receipt"},
		&core.AutodateField{Name: "created", OnCreate: true},
	)
	orders.ListRule = types.Pointer(`@request.auth.id != ""`)
	orders.ViewRule = types.Pointer(`@request.auth.id != ""`)
	orders.CreateRule = types.Pointer(`@request.auth.id != ""`)
	return app.Save(orders)
}
