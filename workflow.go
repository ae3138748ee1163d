package sluice

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// Workflow is a graph of jobs enqueued together: named tasks, each a
// normal job, each run once the tasks it comes after have completed (see
// EnqueueOptions.DependsOn and OnDependencyFailure, which a task's options
// may set for the policy). Build one with NewWorkflow and Add, and enqueue
// it with Client.EnqueueWorkflow or EnqueueWorkflowTx; the builder checks
// the graph then. A Workflow is not safe for concurrent use while it is
// built.
type Workflow struct {
	name  string
	tasks []workflowTask
	index map[string]int
	cb    groupCallbacks
}

// workflowTask is one task as added.
type workflowTask struct {
	name  string
	args  JobArgs
	opts  *EnqueueOptions
	after []string
}

// NewWorkflow returns an empty workflow named name: a label to find it
// by (ListWorkflows), not unique.
func NewWorkflow(name string) *Workflow {
	return &Workflow{name: name, index: make(map[string]int)}
}

// Add adds the task named task, a job with args and opts (nil for the
// defaults), which runs once every task named in after has completed, and
// returns w. What is wrong with a task (a name given twice or empty,
// options a job cannot have) is returned by EnqueueWorkflow, which
// enqueues nothing then.
func (w *Workflow) Add(task string, args JobArgs, opts *EnqueueOptions, after ...string) *Workflow {
	w.tasks = append(w.tasks, workflowTask{name: task, args: args, opts: opts, after: after})
	if _, dup := w.index[task]; !dup {
		w.index[task] = len(w.tasks) - 1
	}
	return w
}

// OnSuccess adds a callback: a job enqueued when every task has
// completed. It returns w.
func (w *Workflow) OnSuccess(args JobArgs, opts *EnqueueOptions) *Workflow {
	w.cb.onSuccess = append(w.cb.onSuccess, EnqueueParams{Args: args, Options: opts})
	return w
}

// OnFailure adds a callback: a job enqueued once no task is pending or
// running and some task failed for good or was cancelled. It returns w.
func (w *Workflow) OnFailure(args JobArgs, opts *EnqueueOptions) *Workflow {
	w.cb.onFailure = append(w.cb.onFailure, EnqueueParams{Args: args, Options: opts})
	return w
}

// OnComplete adds a callback: a job enqueued once no task is pending or
// running, whatever their outcomes. It returns w.
func (w *Workflow) OnComplete(args JobArgs, opts *EnqueueOptions) *Workflow {
	w.cb.onComplete = append(w.cb.onComplete, EnqueueParams{Args: args, Options: opts})
	return w
}

// WorkflowResult is an enqueued workflow.
type WorkflowResult struct {
	// ID is the workflow's ID, each task's JobRow.GroupID.
	ID string
	// Tasks are the tasks' jobs by task name.
	Tasks map[string]*JobRow
}

// EnqueueWorkflow enqueues w atomically: every task, each a job carrying
// the workflow's ID (JobRow.GroupID) and its name (JobRow.Task), and the
// workflow's row, in one transaction and one statement for all the tasks.
// Tasks that come after others are stored waiting for them, and run once
// they all completed; one whose dependency fails for good is cancelled
// (or runs anyway under DependencyRun). A workflow that cannot be (an
// empty or repeated task name, a task after one that is not there, a
// cycle, more than MaxGroupJobs tasks, more than MaxDependencies before
// one task, a task with a UniqueKey or DependsOn of its own, a task a job
// cannot be) returns an error matching ErrInvalidGroup, a *GroupError
// naming the task, and writes nothing. Enqueue middleware does not run.
func (c *Client[TTx]) EnqueueWorkflow(ctx context.Context, w *Workflow) (*WorkflowResult, error) {
	return c.enqueueWorkflow(ctx, c.exec, false, w)
}

// EnqueueWorkflowTx is EnqueueWorkflow inside tx: the workflow exists if
// and only if tx commits.
func (c *Client[TTx]) EnqueueWorkflowTx(ctx context.Context, tx TTx, w *Workflow) (*WorkflowResult, error) {
	if isNil(tx) {
		return nil, fmt.Errorf("enqueue workflow: %w", ErrNilTx)
	}
	return c.enqueueWorkflow(ctx, c.driver.UnwrapExecutor(tx), true, w)
}

func (c *Client[TTx]) enqueueWorkflow(ctx context.Context, exec driver.Executor, inTx bool, w *Workflow) (*WorkflowResult, error) {
	if w == nil {
		return nil, fmt.Errorf("enqueue workflow: %w", &GroupError{Reason: "nil workflow"})
	}
	now := c.now()
	inserts, err := c.workflowInserts(w, now)
	if err != nil {
		return nil, fmt.Errorf("enqueue workflow: %w", err)
	}
	cb, err := c.callbackInserts(w.name, &w.cb, now)
	if err != nil {
		return nil, fmt.Errorf("enqueue workflow: %w", err)
	}
	g := driver.GroupRow{ID: c.cfg.NewJobID(), Kind: KindWorkflow, Name: w.name, CreatedAt: now, Callbacks: cb}
	if err := checkGroupName(w.name); err != nil {
		return nil, fmt.Errorf("enqueue workflow: %w", err)
	}
	rows, err := c.insertGroup(ctx, exec, inTx, g, inserts, now)
	if err != nil {
		return nil, fmt.Errorf("enqueue workflow %q: %w", w.name, err)
	}
	res := &WorkflowResult{ID: g.ID, Tasks: make(map[string]*JobRow, len(rows))}
	for _, row := range rows {
		res.Tasks[row.Task] = row
	}
	return res, nil
}

// checkGroupName returns a *GroupError for a name no group can have.
func checkGroupName(name string) error {
	if err := driver.CheckText(name); err != nil {
		return &GroupError{Name: name, Reason: "the name " + err.Error()}
	}
	return nil
}

// workflowInserts checks w's graph and returns its tasks as jobs to
// insert, each with its dependencies' IDs.
func (c *Client[TTx]) workflowInserts(w *Workflow, now time.Time) ([]*driver.JobInsert, error) {
	whole := func(reason string) error { return &GroupError{Name: w.name, Reason: reason} }
	fail := func(i int, task, reason string) error {
		return &GroupError{Name: w.name, Task: task, Part: "Tasks", Index: i, Reason: reason}
	}
	switch {
	case len(w.tasks) == 0:
		return nil, whole("no task")
	case len(w.tasks) > MaxGroupJobs:
		return nil, whole(fmt.Sprintf("%d tasks, more than %d", len(w.tasks), MaxGroupJobs))
	}
	for i, t := range w.tasks {
		switch {
		case t.name == "":
			return nil, fail(i, fmt.Sprintf("task %d", i), "has no name")
		case w.index[t.name] != i:
			return nil, fail(i, t.name, "is added twice")
		case len(t.after) > MaxDependencies:
			return nil, fail(i, t.name, fmt.Sprintf("comes after %d tasks, more than %d", len(t.after), MaxDependencies))
		}
		if err := driver.CheckText(t.name); err != nil {
			return nil, fail(i, t.name, "the name "+err.Error())
		}
		for _, a := range t.after {
			if _, ok := w.index[a]; !ok {
				return nil, fail(i, t.name, fmt.Sprintf("comes after %q, which is not a task of the workflow", a))
			}
		}
	}
	if cycle := findCycle(w); cycle != nil {
		return nil, fail(w.index[cycle[0]], cycle[0], fmt.Sprintf("is in a cycle: %v", cycle))
	}
	inserts := make([]*driver.JobInsert, len(w.tasks))
	for i, t := range w.tasks {
		ins, err := c.taskInsert(t, now)
		if err != nil {
			return nil, &GroupError{Name: w.name, Task: t.name, Part: "Tasks", Index: i, Err: err}
		}
		inserts[i] = ins
	}
	// Every ID is known now: each task waits for the tasks it comes after.
	for i, t := range w.tasks {
		for _, a := range t.after {
			id := inserts[w.index[a]].ID
			if !slices.Contains(inserts[i].DependsOn, id) {
				inserts[i].DependsOn = append(inserts[i].DependsOn, id)
			}
		}
		if len(inserts[i].DependsOn) == 0 {
			inserts[i].OnDependencyFailure = ""
		}
	}
	return inserts, nil
}

// taskInsert builds the insert of task t, without its dependencies: its
// options are an enqueue's, but for DependsOn and UniqueKey, which a task
// cannot have, and OnDependencyFailure, which applies to the tasks it
// comes after.
func (c *Client[TTx]) taskInsert(t workflowTask, now time.Time) (*driver.JobInsert, error) {
	var opts EnqueueOptions
	if t.opts != nil {
		opts = *t.opts
	}
	switch {
	case len(opts.DependsOn) > 0:
		return nil, &OptionsError{Field: "DependsOn", Reason: "a task depends on the tasks it comes after, not on jobs"}
	case opts.UniqueKey != "":
		return nil, &OptionsError{Field: "UniqueKey", Reason: "a task has no unique key"}
	}
	policy := opts.OnDependencyFailure
	if policy == "" {
		policy = DependencyCancel
	}
	if !policy.Valid() {
		return nil, &OptionsError{Field: "OnDependencyFailure",
			Reason: fmt.Sprintf("%q is not %q or %q", policy, DependencyCancel, DependencyRun)}
	}
	opts.OnDependencyFailure = ""
	ins, err := c.newInsert(t.args, &opts, now)
	if err != nil {
		return nil, err
	}
	ins.Task = t.name
	ins.OnDependencyFailure = policy
	return ins, nil
}

// findCycle returns the tasks of a cycle of w's graph, nil when it has
// none (Kahn's algorithm: the tasks never freed are on a cycle or after
// one; one walk from one of them finds a cycle).
func findCycle(w *Workflow) []string {
	indegree := make([]int, len(w.tasks))
	next := make([][]int, len(w.tasks))
	for i, t := range w.tasks {
		for _, a := range slices.Compact(slices.Sorted(slices.Values(t.after))) {
			j := w.index[a]
			next[j] = append(next[j], i)
			indegree[i]++
		}
	}
	var free []int
	for i, d := range indegree {
		if d == 0 {
			free = append(free, i)
		}
	}
	seen := 0
	for len(free) > 0 {
		i := free[len(free)-1]
		free = free[:len(free)-1]
		seen++
		for _, j := range next[i] {
			if indegree[j]--; indegree[j] == 0 {
				free = append(free, j)
			}
		}
	}
	if seen == len(w.tasks) {
		return nil
	}
	// Walk back along unfreed dependencies until a task repeats.
	at := slices.IndexFunc(indegree, func(d int) bool { return d > 0 })
	order := map[int]int{}
	var path []string
	for {
		if k, ok := order[at]; ok {
			return path[k:]
		}
		order[at] = len(path)
		path = append(path, w.tasks[at].name)
		for _, a := range w.tasks[at].after {
			if j := w.index[a]; indegree[j] > 0 {
				at = j
				break
			}
		}
	}
}

// GetWorkflow returns the workflow id with its tasks (each a JobRow with
// its Task, status and times) and their counts by status; an error
// matching ErrNotFound when there is none.
func (c *Client[TTx]) GetWorkflow(ctx context.Context, id string) (*Group, error) {
	return c.getGroup(ctx, KindWorkflow, id)
}

// ListWorkflows returns the workflows f selects, newest first.
func (c *Client[TTx]) ListWorkflows(ctx context.Context, f *GroupFilter) (*GroupList, error) {
	return c.listGroups(ctx, KindWorkflow, f)
}

// CancelWorkflow cancels the workflow id: its pending and waiting tasks
// never run, and its running ones are cancelled as Cancel cancels them
// (their workers' contexts end within about a second). It returns the
// tasks cancelled; the workflow is then done, and its OnFailure and
// OnComplete callbacks are enqueued. An unknown ID returns an error
// matching ErrNotFound.
func (c *Client[TTx]) CancelWorkflow(ctx context.Context, id string) ([]*JobRow, error) {
	return c.cancelGroup(ctx, KindWorkflow, id)
}

// RetryWorkflow retries the workflow id, atomically: its failed tasks,
// and its cancelled tasks that come after no other, run again with a fresh
// retry budget (as Requeue gives); its cancelled tasks that come after
// others wait for them again; and the graph goes on from there. The
// workflow is done again once none of its tasks is live, and its
// callbacks are enqueued again then. It returns the tasks changed; an
// unknown ID returns an error matching ErrNotFound.
func (c *Client[TTx]) RetryWorkflow(ctx context.Context, id string) ([]*JobRow, error) {
	return c.retryGroup(ctx, KindWorkflow, id)
}
