package faultjob

import (
	"context"
	"errors"
	"time"

	"github.com/sluicehq/sluice"
)

// StepTopic is the topic of StepArgs.
const StepTopic = "fault-step"

// StepArgs are the arguments of the jobs of the workflow scenario: a
// workflow's tasks, a batch's jobs and both's callbacks.
type StepArgs struct {
	// Name names the job within the scenario: its group's label and its
	// task, job or callback ("wf-17/c", "batch-3/5", "wf-17/on_success").
	Name string `json:"name"`
	// Fail makes every attempt fail, with no effect: the job, enqueued
	// with no retries, fails for good.
	Fail bool `json:"fail,omitempty"`
}

// Topic implements sluice.JobArgs.
func (StepArgs) Topic() string { return StepTopic }

// ErrStepFailed is the error of a StepArgs job told to fail.
var ErrStepFailed = errors.New("faultjob: the step fails, as it was told to")

// StepWorker works StepArgs jobs as Worker works Args jobs (the effect
// and the Ack in one transaction), but for a job told to fail, which
// returns ErrStepFailed with no effect, leaving the client to record the
// failure. Of the attempts' starts (Worker.Attempts) it records only
// those of jobs that wait for others, tasks after others and callbacks:
// the only ones whose starts the scenario checks.
type StepWorker[TTx any] struct {
	sluice.WorkerDefaults[StepArgs]
	Worker *Worker[TTx]
}

// Work implements sluice.Worker.
func (w *StepWorker[TTx]) Work(ctx context.Context, job *sluice.Job[StepArgs]) error {
	worker := w.Worker
	if waits := len(job.DependsOn) > 0 || job.CallbackOf != ""; worker.Attempts && !waits {
		quiet := *worker
		quiet.Attempts = false
		worker = &quiet
	}
	if !job.Args.Fail {
		return worker.work(ctx, job, job.JobRow)
	}
	if worker.Attempts {
		if err := worker.record(ctx, job.JobRow, time.Now().UnixMicro()); err != nil {
			return err
		}
	}
	if err := sleep(ctx, worker.Delay); err != nil {
		return err
	}
	return ErrStepFailed
}
