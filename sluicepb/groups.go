package sluicepb

import (
	"context"

	"github.com/pocketbase/pocketbase/core"

	"github.com/sluicehq/sluice"
)

// EnqueueWorkflowTx enqueues the workflow w in the transaction of txApp,
// as EnqueueTx enqueues a job: its tasks and its row exist if and only if
// the transaction commits, and workers start its first tasks as soon as
// it does. An app that is not in a transaction returns an error matching
// ErrNotInTransaction; a workflow that cannot be enqueued, sluice's
// *GroupError (see sluice.Client.EnqueueWorkflow). Outside a transaction,
// call the Client's EnqueueWorkflow.
func (j *Jobs) EnqueueWorkflowTx(ctx context.Context, txApp core.App, w *sluice.Workflow) (*sluice.WorkflowResult, error) {
	tx, c, err := j.txClient(txApp, "enqueue workflow")
	if err != nil {
		return nil, err
	}
	res, err := c.EnqueueWorkflowTx(ctx, tx, w)
	if err != nil {
		return nil, err
	}
	rows := make([]*sluice.JobRow, 0, len(res.Tasks))
	for _, row := range res.Tasks {
		rows = append(rows, row)
	}
	j.wakeQueuesOf(txApp, rows)
	return res, nil
}

// EnqueueBatchTx enqueues the batch b in the transaction of txApp, as
// EnqueueWorkflowTx enqueues a workflow (see sluice.Client.EnqueueBatch).
func (j *Jobs) EnqueueBatchTx(ctx context.Context, txApp core.App, b *sluice.Batch) (*sluice.BatchResult, error) {
	tx, c, err := j.txClient(txApp, "enqueue batch")
	if err != nil {
		return nil, err
	}
	res, err := c.EnqueueBatchTx(ctx, tx, b)
	if err != nil {
		return nil, err
	}
	j.wakeQueuesOf(txApp, res.Jobs)
	return res, nil
}

// AddToBatchTx adds jobs to the open batch id in the transaction of
// txApp (see sluice.Client.AddToBatch): they exist if and only if the
// transaction commits.
func (j *Jobs) AddToBatchTx(ctx context.Context, txApp core.App, id string, jobs ...sluice.EnqueueParams) ([]*sluice.JobRow, error) {
	tx, c, err := j.txClient(txApp, "add to batch")
	if err != nil {
		return nil, err
	}
	rows, err := c.AddToBatchTx(ctx, tx, id, jobs...)
	if err != nil {
		return nil, err
	}
	j.wakeQueuesOf(txApp, rows)
	return rows, nil
}

// wakeQueuesOf wakes the workers of the queues of rows once txApp's
// transaction has committed.
func (j *Jobs) wakeQueuesOf(txApp core.App, rows []*sluice.JobRow) {
	var queues []string
	seen := map[string]bool{}
	for _, r := range rows {
		if !seen[r.Queue] {
			seen[r.Queue] = true
			queues = append(queues, r.Queue)
		}
	}
	if len(queues) > 0 {
		j.wakeOnCommit(txApp, queues...)
	}
}
