// Package sluice is a transaction-first background job queue. The database
// a service already has becomes its queue: SQLite (driver/sqlitedriver) as
// the embedded, zero-setup default, Postgres (pgx/v5) for scale-out.
//
// A job and the business write that caused it commit or roll back together:
// enqueue in the caller's transaction with [Client.EnqueueTx]. A worker can
// finish its job in the transaction of its own writes with [Client.Ack] or
// [Client.Nack], so the job's status and the business data never disagree.
//
// # Vocabulary
//
//   - topic: the job's type, from [JobArgs.Topic]; it selects the worker.
//   - payload: the job's arguments as JSON, at most 1 MiB by default.
//   - status: pending, then processing, then completed, failed or
//     cancelled. A retry is pending again with a later run_at; failed is the
//     dead letter, kept and inspectable.
//   - run_at: when the job may run; in the future means delayed.
//   - lease: a claimed job's locked_until. A processing job whose lease has
//     passed belongs to nobody and is taken back and run again; running jobs'
//     leases are extended by a heartbeat, so a long job is never taken over
//     while its client is alive.
//   - retries: by default 3 after the first attempt, 1, 4 and 9 minutes
//     apart ([SquareRetryPolicy]).
//   - queue, priority, unique key: named queues with their own worker counts
//     ([Config.Queues]); smaller priority first within a queue; at most one
//     live (pending or processing) job per unique key.
//
// # Workers
//
// A worker is a type with a Work method for one argument type, registered
// with [AddWorker]:
//
//	type EmailArgs struct{ To string `json:"to"` }
//
//	func (EmailArgs) Topic() string { return "mail_digest" }
//
//	type EmailWorker struct{ sluice.WorkerDefaults[EmailArgs] }
//
//	func (w *EmailWorker) Work(ctx context.Context, job *sluice.Job[EmailArgs]) error {
//		return send(ctx, job.Args.To)
//	}
//
// Work returns nil to complete the job, an error to retry it (or fail it
// once its retries are used up), [Snooze] to run it again later without
// spending a retry, or [Cancel] to end it. A panic is recovered and recorded
// with its stack. Each job runs under a timeout ([Config.JobTimeout], 10
// minutes by default). A worker may report how far it got with
// [ReportProgress], which the client stores at a bounded rate.
//
// # Operating the queue
//
// [Client.Get], [Client.List] and [Client.Stats] inspect jobs; a job's
// [JobRow.History] lists its attempts with when, where and how each ended.
// [Client.Cancel], [Client.Requeue], [Client.Delete] and [Client.RetryNow]
// act on jobs; [Client.Explain] says in plain words what holds one;
// [Client.Subscribe] reports, in the same process, what happens to jobs,
// and [Client.Watch] what any process does to them, read from the
// database by one change feed per client. [RawArgs] enqueue a job by its
// topic's name and a JSON payload, for callers without Go types: package
// sluiceweb serves all of this over HTTP. docs/operations.md and
// docs/web.md in the repository tell the whole story.
//
// # Schedules
//
// [Config.PeriodicJobs] declares jobs enqueued on a cron schedule in code;
// [Client.CreateSchedule] and its siblings manage [Schedule]s stored in the
// database. Every started client schedules, and each tick enqueues exactly
// one job however many run; docs/schedules.md tells how.
//
// # Guarantees
//
//   - A job enqueued in a transaction that rolls back never exists; one
//     enqueued in a transaction that commits is never lost.
//   - At-least-once execution: a job runs again only when its attempt failed
//     or its client is gone (its lease expired). A job acked in the worker's
//     committed transaction is never worked again.
//   - Bad input (empty topic, args that do not encode, a payload over the
//     limit, invalid options, an unknown queue, a nil transaction, an invalid
//     Config) is rejected with a typed error before anything is written.
package sluice
