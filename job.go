package sluice

import (
	"time"

	"github.com/sluicehq/sluice/driver"
)

// JobArgs are a job's arguments. They are stored as JSON, so the type must
// encode and decode with encoding/json. Topic names the job's type and
// selects its worker; it must be a constant of the type, valid on the zero
// value, and valid UTF-8 without NUL characters.
type JobArgs interface {
	Topic() string
}

// JobRow is a job as it is stored: everything but its typed arguments.
type JobRow = driver.JobRow

// JobStatus is where a job is in its life.
type JobStatus = driver.JobStatus

// AttemptError is the recorded error of one failed attempt.
type AttemptError = driver.AttemptError

// AttemptRecord is one attempt of a job, as JobRow.History tells it: its
// number, when it started and ended, which client ran it, and its error,
// if it failed.
type AttemptRecord = driver.AttemptRecord

// The statuses a job can have: pending, then processing, then completed,
// failed (retries used up: the dead letter) or cancelled. A job waiting to be
// retried is pending with a later RunAt.
const (
	StatusPending    = driver.StatusPending
	StatusProcessing = driver.StatusProcessing
	StatusCompleted  = driver.StatusCompleted
	StatusFailed     = driver.StatusFailed
	StatusCancelled  = driver.StatusCancelled
)

// Job is a job handed to a Worker: its stored row and its decoded
// arguments. Pass it to Client.Ack or Client.Nack to finish it inside a
// transaction.
type Job[T JobArgs] struct {
	*JobRow
	// Args are the job's decoded arguments.
	Args T

	run *jobRun
}

// handle returns the claim a *Job[T] was handed with, for every T, so that
// Ack and Nack accept any (see JobRef).
func (j *Job[T]) handle() *jobRun { return j.run }

// JobRef is a job handed to a worker, as accepted by Client.Ack and
// Client.Nack: any *Job[T].
type JobRef interface {
	handle() *jobRun
}

// EnqueueOptions are per-job options. The zero value (or nil) enqueues a job
// into the default queue, to run now, with priority 0 and the default number
// of retries.
type EnqueueOptions struct {
	// RunAt is when the job may run; zero means now. A time in the future
	// delays the job.
	RunAt time.Time
	// Queue is the queue to enqueue into; it must be one of
	// Config.Queues. Empty means QueueDefault.
	Queue string
	// Priority orders jobs within a queue: smaller runs first. Default 0.
	Priority int
	// MaxRetries is how many times the job is retried after its first
	// attempt fails. 0 means the worker's or the Config's default
	// (3 unless changed); NoRetries means never retry. Other negative values,
	// and values above 2^30, are rejected.
	MaxRetries int
	// UniqueKey, when not empty, makes the job unique: while a pending or
	// processing job with the same key exists, enqueueing returns that job
	// with Duplicate set instead of a new one. It must be valid UTF-8
	// without NUL characters, which Postgres cannot store.
	UniqueKey string
	// Tags label the job, for finding it with JobFilter.Tags: at most
	// MaxTags of them, each 1 to MaxTagBytes bytes of UTF-8 without NUL
	// characters; repeats are dropped. Shown in JobRow.Tags.
	Tags []string
	// Metadata is data about the job rather than for it (who asked for
	// it, a trace context, a tenant), stored as a JSON object of at most
	// MaxMetadataBytes beside the arguments, shown in JobRow.Metadata and
	// filterable by string value with JobFilter.Metadata. Enqueue
	// middleware may add to it. Keys and strings must be UTF-8 without NUL
	// characters.
	Metadata map[string]any
	// DependsOn are the IDs of jobs this one waits for: it is stored
	// pending but waiting (JobRow.Waiting), and no client starts it until
	// every one of them has completed; then it runs at RunAt, or at once
	// if RunAt has passed. Clients release waiting jobs about once a poll
	// interval. At most MaxDependencies IDs; repeats are dropped. IDs of
	// jobs that do not exist count as failed dependencies.
	DependsOn []string
	// OnDependencyFailure says what happens when a dependency fails for
	// good, is cancelled or is deleted: DependencyCancel (the default)
	// cancels this job too, which in turn settles the jobs that depend on
	// it; DependencyRun runs it anyway once every dependency is final.
	OnDependencyFailure DependencyPolicy
	// Key is the job's key: the customer, account, tenant or order it is
	// for, which the limits per key count it under (SetKeyLimits), fair
	// sharing takes turns between, and sequences order by. At most
	// MaxKeyBytes of UTF-8 without NUL characters; empty means the key
	// the args give (KeyedArgs), if any, else none. Shown in JobRow.Key
	// and selected by JobFilter.Keys.
	Key string
	// Sequence puts the job in the sequence of its key in its queue: the
	// jobs of one sequence run one at a time, in the order they were
	// enqueued (see SequencePolicy). It needs a key. Empty means the
	// policy stored for the job's topic or queue (KeyLimits.Sequence), if
	// any, else none.
	Sequence SequencePolicy
}

// KeyedArgs are job arguments that name their job's key, so that callers
// need not repeat it in EnqueueOptions.Key, which takes precedence.
type KeyedArgs interface {
	JobArgs
	// JobKey returns the job's key; empty for none.
	JobKey() string
}

// NoRetries, as EnqueueOptions.MaxRetries or Config.MaxRetries, runs a job
// at most once.
const NoRetries = -1

// EnqueueResult is the outcome of enqueueing one job.
type EnqueueResult struct {
	// Job is the enqueued job or, when Duplicate, the existing live job with
	// the same unique key.
	Job *JobRow
	// Duplicate is true when nothing was enqueued because a live job with
	// the same UniqueKey exists.
	Duplicate bool
}

// EnqueueParams is one job of an EnqueueMany call.
type EnqueueParams struct {
	// Args are the job's arguments.
	Args JobArgs
	// Options are the job's options; nil means defaults.
	Options *EnqueueOptions
}
