package sluice

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// Worker works the jobs of one topic, the one its T's Topic() names.
// Embed WorkerDefaults[T] to get the defaults for everything but Work.
type Worker[T JobArgs] interface {
	// Work works one job. Returning nil completes the job; an error retries
	// it per the retry policy, or fails it once its retries are used up.
	// Snooze(d) runs it again after d without spending a retry; Cancel(err)
	// ends it as cancelled. A worker that finished the job with Ack or Nack
	// inside its own transaction returns after committing it. ctx ends when
	// the job's timeout passes or the client stops.
	Work(ctx context.Context, job *Job[T]) error

	// Timeout returns how long job may run before its context is
	// cancelled. 0 means Config.JobTimeout; a negative value means no
	// timeout.
	Timeout(job *Job[T]) time.Duration

	// RetryPolicy returns the policy that schedules retries of this
	// worker's jobs, or nil for Config.RetryPolicy.
	RetryPolicy() RetryPolicy

	// MaxRetries returns the retries given to jobs of this topic when
	// EnqueueOptions.MaxRetries is 0 and the enqueuing client has this worker
	// registered: a value >= 0, NoRetries, or any other negative value for
	// Config.MaxRetries.
	MaxRetries() int
}

// WorkerDefaults gives a Worker the defaults for everything but Work: the
// Config's timeout, retry policy and retries. Embed it and override what
// differs.
type WorkerDefaults[T JobArgs] struct{}

// Timeout returns 0: the Config's JobTimeout.
func (WorkerDefaults[T]) Timeout(*Job[T]) time.Duration { return 0 }

// RetryPolicy returns nil: the Config's RetryPolicy.
func (WorkerDefaults[T]) RetryPolicy() RetryPolicy { return nil }

// MaxRetries returns -2: the Config's MaxRetries.
func (WorkerDefaults[T]) MaxRetries() int { return useConfigRetries }

// useConfigRetries is what WorkerDefaults.MaxRetries returns.
const useConfigRetries = -2

// WorkFunc turns a function into a Worker with the defaults of
// WorkerDefaults.
func WorkFunc[T JobArgs](f func(ctx context.Context, job *Job[T]) error) Worker[T] {
	return &funcWorker[T]{f: f}
}

type funcWorker[T JobArgs] struct {
	WorkerDefaults[T]
	f func(ctx context.Context, job *Job[T]) error
}

func (w *funcWorker[T]) Work(ctx context.Context, job *Job[T]) error { return w.f(ctx, job) }

// Workers is the set of workers a client runs, one per topic. Create it with
// NewWorkers and fill it with AddWorker before passing it to NewClient.
type Workers struct {
	units map[string]*workUnit
}

// NewWorkers returns an empty set of workers.
func NewWorkers() *Workers {
	return &Workers{units: make(map[string]*workUnit)}
}

// AddWorker registers worker for the topic of T. It panics if the topic is
// empty or already has a worker; AddWorkerSafely returns an error instead.
func AddWorker[T JobArgs](workers *Workers, worker Worker[T]) {
	if err := AddWorkerSafely(workers, worker); err != nil {
		panic(err)
	}
}

// AddWorkerSafely registers worker for the topic of T, or returns an error
// matching ErrEmptyTopic or ErrDuplicateWorker.
func AddWorkerSafely[T JobArgs](workers *Workers, worker Worker[T]) error {
	var zero T
	topic := zero.Topic()
	if topic == "" {
		return fmt.Errorf("add worker %T: %w", zero, ErrEmptyTopic)
	}
	if _, ok := workers.units[topic]; ok {
		return fmt.Errorf("add worker %q: %w", topic, ErrDuplicateWorker)
	}
	workers.units[topic] = &workUnit{
		topic:       topic,
		maxRetries:  worker.MaxRetries(),
		retryPolicy: worker.RetryPolicy(),
		check:       checkArgs[T](),
		prepare: func(run *jobRun) (any, time.Duration, error) {
			// The worker gets its own copy of the row, in the same
			// allocation as its Job: the client fences the claim with the
			// original, whatever the worker does.
			box := &struct {
				job Job[T]
				row JobRow
			}{row: *run.row}
			box.job = Job[T]{JobRow: &box.row, run: run}
			if err := json.Unmarshal(run.row.Payload, &box.job.Args); err != nil {
				return nil, 0, fmt.Errorf("decode args of %q: %w", topic, err)
			}
			return &box.job, worker.Timeout(&box.job), nil
		},
		work: func(ctx context.Context, job any) error { return worker.Work(ctx, job.(*Job[T])) },
	}
	return nil
}

// workUnit is a worker with its type erased, as the client runs it.
type workUnit struct {
	topic       string
	maxRetries  int
	retryPolicy RetryPolicy
	// check checks that a payload of RawArgs decodes into the worker's
	// argument type.
	check func(payload []byte) error
	// prepare decodes a job's args and returns the *Job[T] that work takes
	// and the worker's timeout for it.
	prepare func(run *jobRun) (job any, timeout time.Duration, err error)
	// work works a job prepare returned.
	work func(ctx context.Context, job any) error
}

// jobRun is one claim of a job by this client, shared by the executor and
// the Job handed to the worker.
type jobRun struct {
	row  *JobRow
	unit *workUnit
	// job is the job with its decoded arguments, as unit.work takes it,
	// and timeout the worker's timeout for it; prepErr is why the job
	// could not be prepared (no worker, arguments that do not decode), in
	// which case job is nil.
	job     any
	timeout time.Duration
	prepErr error
	// settled is set when the worker acked or nacked in its own
	// transaction.
	settled atomic.Bool
	// revoked is set when the job was cancelled, deleted or taken back
	// while running, so that its outcome cannot be recorded.
	revoked atomic.Bool
	// result is what the worker passed to SetResult, as JSON.
	result atomic.Pointer[[]byte]
	// progress is what the worker last passed to ReportProgress, and
	// progressWritten the report last written to the database; only the
	// run's progress writer touches progressWritten.
	progress        atomic.Pointer[JobProgress]
	progressWritten *JobProgress
	// finished is set by whichever ends the run first: the worker
	// returning, or the client abandoning a worker that ignores its
	// context.
	finished atomic.Bool
	// cancel ends the worker's context (a timeout's, or a plain one);
	// revoke ends it with a cause first. Both are set before the run is
	// tracked as running.
	cancel context.CancelFunc
	revoke context.CancelCauseFunc
	// fin is the outcome the client writes when the run ends (by whichever
	// ends it: see finished).
	fin driver.JobFinalize
}

// end ends the worker's context with cause, which starts the grace period
// the worker has to return.
func (jr *jobRun) end(cause error) {
	jr.revoke(cause)
	jr.cancel()
}
