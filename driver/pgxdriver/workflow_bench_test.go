package pgxdriver_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/clientbench"
)

// Benchmarks of workflows. Figures are recorded in docs/performance.md.

// BenchmarkClientEnqueueWorkflow10k enqueues a workflow of 10,000 tasks
// (chains and fan-outs of ten) in one call, each iteration into the same
// table.
func BenchmarkClientEnqueueWorkflow10k(b *testing.B) {
	d, _ := benchDriver(b)
	clientbench.EnqueueWorkflow(b, d, clientbench.Size(10_000))
}

// BenchmarkClientWorkWorkflows works 1,000 workflows of ten no-op tasks
// (chains and fan-outs) from their enqueue to their last task done,
// against 10,000 independent jobs enqueued ten a call, with the default
// Config.
func BenchmarkClientWorkWorkflows(b *testing.B) {
	n := clientbench.Size(10_000)
	for b.Loop() {
		clientbench.WorkflowVersus(b, func(bool) (driver.Driver[pgx.Tx], func()) {
			d, _ := benchDriver(b)
			return d, func() {}
		}, n, 3, 10, clientbench.BurnDownOptions{})
	}
}
