// Package sluicepb runs a sluice job queue inside a PocketBase app: jobs
// live in a table of data.db (_jobs), written through PocketBase's own
// connections, so that a job can be enqueued in the same transaction as
// the records that caused it.
//
//	app := pocketbase.New()
//	jobs, err := sluicepb.Register(app, &sluicepb.Config{EnqueueRule: `@request.auth.id != ""`})
//	if err != nil { ... }
//	sluicepb.AddWorker(jobs, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[ChargeArgs]) error { ... }))
//	app.Start()
//
// Register migrates the tables at bootstrap, starts the workers when the
// app serves and stops them, letting running jobs finish, when it
// terminates.
//
// # Transactions
//
// Inside app.RunInTransaction, pass the txApp to [Jobs.EnqueueTx], [Jobs.Ack]
// and [Jobs.Nack]: the job commits or rolls back with the records written
// through txApp, and workers start it as soon as the transaction commits.
// [EnqueueOnCreate] and [EnqueueOnUpdate] enqueue a job in the transaction
// that writes each record of a collection, through PocketBase's API or the
// Go one alike.
//
// # HTTP
//
// Unless Config.DisableHTTP, the app serves the sluice API under /api/jobs
// (POST /api/jobs/enqueue, GET /api/jobs, GET /api/jobs/{id},
// POST /api/jobs/{id}/requeue, DELETE /api/jobs/{id}, GET /api/jobs/stats
// and the rest of sluiceweb's endpoints), authenticated by PocketBase auth
// tokens and authorized by Config.EnqueueRule and Config.ManageRule;
// superusers may do everything. The admin UI gets a Jobs panel showing the
// sluice dashboard.
package sluicepb
