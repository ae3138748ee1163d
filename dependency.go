package sluice

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/driver"
)

// ErrNoResult is returned by DependencyResult for a dependency that
// stored no result: it completed without one (see SetResult), or it did
// not complete and the job runs anyway (DependencyRun).
var ErrNoResult = errors.New("sluice: no result")

// Dependencies returns the jobs the job whose context ctx is depends on:
// in a workflow, the tasks it comes after (each with its Task, Status and
// Result); otherwise its EnqueueOptions.DependsOn. They are read with one
// query on the first call, which later calls of this and DependencyResult
// in the same attempt reuse. A job retention already deleted is absent. A
// context that is not a job's returns ErrNotJobContext.
func Dependencies(ctx context.Context) ([]*JobRow, error) {
	jr, _ := ctx.Value(jobRunKey{}).(*jobRun)
	if jr == nil {
		return nil, fmt.Errorf("dependencies: %w", ErrNotJobContext)
	}
	jr.depsOnce.Do(func() {
		ids := jr.row.DependsOn
		if len(ids) == 0 {
			jr.deps = []*JobRow{}
			return
		}
		list, err := jr.run.exec.JobList(ctx, &driver.JobListParams{Filter: driver.JobFilter{IDs: ids}, Limit: len(ids)})
		if err != nil {
			jr.depsErr = fmt.Errorf("dependencies of job %s: %w", jr.row.ID, err)
			return
		}
		jr.deps = list.Jobs
	})
	return jr.deps, jr.depsErr
}

// DependencyResult decodes into a T the result (SetResult) of the task
// named task that the running task comes after, in the workflow of the job
// whose context ctx is. All of the job's dependencies are read with one
// query, once per attempt, however many results it reads. A task it does
// not come after returns an error matching ErrNotFound; one that stored no
// result, ErrNoResult; a context that is not a job's, ErrNotJobContext.
func DependencyResult[T any](ctx context.Context, task string) (T, error) {
	var out T
	deps, err := Dependencies(ctx)
	if err != nil {
		return out, err
	}
	for _, d := range deps {
		if d.Task != task {
			continue
		}
		if d.Result == nil {
			return out, fmt.Errorf("dependency %q (job %s, %s): %w", task, d.ID, d.Status, ErrNoResult)
		}
		if err := json.Unmarshal(d.Result, &out); err != nil {
			return out, fmt.Errorf("dependency %q (job %s): decode result as %T: %w", task, d.ID, out, err)
		}
		return out, nil
	}
	return out, fmt.Errorf("dependency %q: %w: the job comes after no task of that name", task, ErrNotFound)
}
