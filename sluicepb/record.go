package sluicepb

import (
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"

	"github.com/sluicehq/sluice"
)

// RecordJob returns the job to enqueue for the record of e, which has just
// been written in its transaction, and its options (nil for the
// defaults). Nil args enqueue nothing; an error fails the write, which
// then rolls back.
type RecordJob func(e *core.RecordEvent) (sluice.JobArgs, *sluice.EnqueueOptions, error)

// recordHookPriority runs the hooks of EnqueueOnCreate and EnqueueOnUpdate
// before the app's own handlers of the same event, so that their
// transaction spans them: a handler that fails after the write rolls the
// job back too.
const recordHookPriority = -1000

// EnqueueOnCreate enqueues the job that job returns for each record
// created in collection (a name or id), in the transaction that creates
// it: the record and the job commit together or not at all, whether the
// record is created through PocketBase's API, the admin UI, app.Save or
// app.RunInTransaction. A write that is not already in a transaction is
// put in one.
//
// It binds a handler of OnRecordCreateExecute; call it before the app
// serves.
func EnqueueOnCreate(j *Jobs, collection string, job RecordJob) {
	j.app.OnRecordCreateExecute(collection).Bind(&hook.Handler[*core.RecordEvent]{
		Func: j.enqueueWithWrite(job), Priority: recordHookPriority,
	})
}

// EnqueueOnUpdate is EnqueueOnCreate for updates of records of
// collection: the job commits with the update or not at all.
func EnqueueOnUpdate(j *Jobs, collection string, job RecordJob) {
	j.app.OnRecordUpdateExecute(collection).Bind(&hook.Handler[*core.RecordEvent]{
		Func: j.enqueueWithWrite(job), Priority: recordHookPriority,
	})
}

// enqueueWithWrite returns a record hook that runs the write, then
// enqueues job's job, in one transaction.
func (j *Jobs) enqueueWithWrite(job RecordJob) func(e *core.RecordEvent) error {
	return func(e *core.RecordEvent) error {
		write := func(txApp core.App) error {
			e.App = txApp
			if err := e.Next(); err != nil {
				return err
			}
			args, opts, err := job(e)
			if err != nil || args == nil {
				return err
			}
			_, err = j.EnqueueTx(e.Context, txApp, args, opts)
			return err
		}
		if e.App.IsTransactional() {
			return write(e.App)
		}
		// The hooks after this one (OnRecordAfterCreateSuccess ...) must
		// not get the transaction's app once it has ended.
		outer := e.App
		defer func() { e.App = outer }()
		return outer.RunInTransaction(write)
	}
}
