package sluice

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"
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

// Middleware returns nil: no middleware of the worker's own, only the
// Config's WorkMiddleware. A worker that defines Middleware wraps each of
// its jobs in what it returns, inside the Config's (see WorkMiddleware).
func (WorkerDefaults[T]) Middleware() []WorkMiddleware { return nil }

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
	return addUnit(workers, topic, worker, checkArgs[T](), func(payload []byte, args *T) error {
		return json.Unmarshal(payload, args)
	})
}

// AddRawWorker registers worker for topic, a topic with no Go argument
// type: its jobs reach the worker as RawArgs, TopicName set to topic and
// Payload to the job's JSON as stored. It is how a worker written in
// another language, or one that forwards payloads as they are, joins a
// client. The worker's Timeout, RetryPolicy, MaxRetries and Middleware
// apply as to any worker. RawArgs for topic are accepted with any JSON
// payload, since there is no type to check it against. It panics if topic
// is empty or already has a worker; AddRawWorkerSafely returns an error
// instead.
func AddRawWorker(workers *Workers, topic string, worker Worker[RawArgs]) {
	if err := AddRawWorkerSafely(workers, topic, worker); err != nil {
		panic(err)
	}
}

// AddRawWorkerSafely registers worker for topic as AddRawWorker does, or
// returns an error matching ErrEmptyTopic or ErrDuplicateWorker.
func AddRawWorkerSafely(workers *Workers, topic string, worker Worker[RawArgs]) error {
	if topic == "" {
		return fmt.Errorf("add raw worker: %w", ErrEmptyTopic)
	}
	return addUnit(workers, topic, worker, func([]byte) error { return nil }, func(payload []byte, args *RawArgs) error {
		*args = RawArgs{TopicName: topic, Payload: bytes.Clone(payload)}
		return nil
	})
}

// addUnit registers worker for topic, its payloads checked by check when
// given as RawArgs and decoded into a job's Args by decode.
func addUnit[T JobArgs](workers *Workers, topic string, worker Worker[T], check func([]byte) error, decode func(payload []byte, args *T) error) error {
	if _, ok := workers.units[topic]; ok {
		return fmt.Errorf("add worker %q: %w", topic, ErrDuplicateWorker)
	}
	var mw []WorkMiddleware
	if m, ok := any(worker).(workerMiddleware); ok {
		mw = m.Middleware()
	}
	workers.units[topic] = &workUnit{
		topic:       topic,
		middleware:  mw,
		maxRetries:  worker.MaxRetries(),
		retryPolicy: worker.RetryPolicy(),
		check:       check,
		encrypt:     encrypts(worker),
		prepare: func(run *jobRun) (any, time.Duration, error) {
			// The worker gets its own copy of the row, in the same
			// allocation as its Job: the client fences the claim with the
			// original, whatever the worker does.
			box := &struct {
				job Job[T]
				row JobRow
			}{row: *run.row}
			box.job = Job[T]{JobRow: &box.row, run: run}
			run.workerRow = &box.row
			// An encrypted payload is decrypted for the worker's copy only.
			payload, err := open(run.run.cfg.crypt.keys, run.row)
			if err != nil {
				return nil, 0, err
			}
			box.row.Payload = payload
			if err := decode(payload, &box.job.Args); err != nil {
				return nil, 0, fmt.Errorf("decode args of %q: %w", topic, err)
			}
			return &box.job, worker.Timeout(&box.job), nil
		},
		work: func(ctx context.Context, job any) error { return worker.Work(ctx, job.(*Job[T])) },
	}
	return nil
}

// encrypts reports whether worker has its jobs' payloads encrypted.
func encrypts(worker any) bool {
	e, ok := worker.(encryptArgs)
	return ok && e.EncryptArgs()
}

// workUnit is a worker with its type erased, as the client runs it.
type workUnit struct {
	topic       string
	middleware  []WorkMiddleware
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
	// encrypt is set when the worker's EncryptArgs returns true.
	encrypt bool
}
