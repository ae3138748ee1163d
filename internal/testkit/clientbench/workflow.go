package clientbench

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
)

// WorkflowTasks is how many tasks one unit of the benchmarks' workflows
// has: a chain of ten (each task after the one before) or a fan-out (one
// task, eight after it, one after those eight).
const WorkflowTasks = 10

// addUnit adds to w a unit of WorkflowTasks tasks named prefix and their
// place in it, a chain when chain is true and a fan-out otherwise.
func addUnit(w *sluice.Workflow, prefix string, chain bool) {
	name := func(i int) string { return prefix + strconv.Itoa(i) }
	w.Add(name(0), Args{N: 0}, nil)
	last := make([]string, 0, WorkflowTasks-2)
	for i := 1; i < WorkflowTasks-1; i++ {
		after := name(0)
		if chain {
			after = name(i - 1)
		}
		w.Add(name(i), Args{N: i}, nil, after)
		last = append(last, name(i))
	}
	if chain {
		last = last[len(last)-1:]
	}
	w.Add(name(WorkflowTasks-1), Args{N: WorkflowTasks - 1}, nil, last...)
}

// BigWorkflow returns a workflow of units units of WorkflowTasks tasks,
// chains and fan-outs in turn.
func BigWorkflow(units int) *sluice.Workflow {
	w := sluice.NewWorkflow("bench")
	for u := range units {
		addUnit(w, "u"+strconv.Itoa(u)+".", u%2 == 0)
	}
	return w
}

// EnqueueWorkflow enqueues a workflow of tasks tasks (chains and fan-outs
// of WorkflowTasks each) in one EnqueueWorkflow call, b.N times into the
// same table, and reports the median time of a call and its rows (tasks)
// per second. The workflow is built once, outside the measure.
func EnqueueWorkflow[TTx any](b *testing.B, d driver.Driver[TTx], tasks int) {
	c := Client(b, d, nil)
	ctx := context.Background()
	w := BigWorkflow(tasks / WorkflowTasks)
	var times []float64
	for b.Loop() {
		t0 := time.Now()
		res, err := c.EnqueueWorkflow(ctx, w)
		if err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(t0).Seconds())
		if len(res.Tasks) != tasks {
			b.Fatalf("%d tasks enqueued, want %d", len(res.Tasks), tasks)
		}
	}
	med := median(times)
	b.ReportMetric(med*1000, "ms/workflow")
	b.ReportMetric(float64(tasks)/med, "rows/s")
}

// WorkflowVersus works n jobs with no-op workers, reps times each as n
// independent jobs and as n/WorkflowTasks workflows of WorkflowTasks tasks
// (chains and fan-outs in turn), alternately and each on a fresh table
// (fresh's variant is the workflows' run). Each run starts the client,
// then enqueues its jobs from enqueuers goroutines, one call per
// WorkflowTasks jobs (EnqueueMany of independent jobs, or EnqueueWorkflow),
// and is timed from the first enqueue to the last job done. It reports
// the median jobs/s of each, the workflows' share of the independent
// jobs' (workflows/plain), and the median CPU time of the process per
// job of each; it logs each pair's figures, and labels the runs for the
// profiler as Versus does.
func WorkflowVersus[TTx any](b *testing.B, fresh Fresh[TTx], n, reps, enqueuers int, o BurnDownOptions) {
	b.Helper()
	versus(b, fresh, n, reps, "workflow", func(d driver.Driver[TTx], flows bool) float64 {
		return workflowBurn(b, d, n, enqueuers, flows, o)
	})
}

// workflowBurn is one run of WorkflowVersus; it returns jobs/s.
func workflowBurn[TTx any](b *testing.B, d driver.Driver[TTx], n, enqueuers int, flows bool, o BurnDownOptions) float64 {
	b.Helper()
	var done atomic.Int64
	finished := make(chan struct{})
	c := clientWith(b, d, func(context.Context, *sluice.Job[Args]) error {
		if done.Add(1) == int64(n) {
			close(finished)
		}
		return nil
	}, o.Workers, o.Configure)
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	// Every call's arguments are built before the clock starts.
	calls := n / WorkflowTasks
	workflows := make([]*sluice.Workflow, calls)
	batches := make([][]sluice.EnqueueParams, calls)
	for i := range calls {
		if flows {
			workflows[i] = sluice.NewWorkflow("bench")
			addUnit(workflows[i], "", i%2 == 0)
			continue
		}
		batches[i] = make([]sluice.EnqueueParams, WorkflowTasks)
		for j := range batches[i] {
			batches[i][j] = sluice.EnqueueParams{Args: Args{N: j}}
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range enqueuers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < calls; i = int(next.Add(1)) - 1 {
				var err error
				if flows {
					_, err = c.EnqueueWorkflow(ctx, workflows[i])
				} else {
					_, err = c.EnqueueMany(ctx, batches[i])
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	<-finished
	elapsed := time.Since(start)
	if err := c.Stop(ctx); err != nil {
		b.Fatal(err)
	}
	return float64(n) / elapsed.Seconds()
}
