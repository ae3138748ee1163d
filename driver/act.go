package driver

import "time"

// CancellableSQL is the SQL condition, on the columns of the jobs table,
// of the jobs a cancel changes: pending and processing ones, and failed
// ones that hold their sequence ([SequenceHold]), which a cancel releases.
const CancellableSQL = `(status IN ('pending', 'processing') OR (status = 'failed' AND sequence = 'hold'))`

// JobActParams are the params of the operator's actions on jobs
// ([Executor.JobCancel], [Executor.JobRequeue], [Executor.JobDelete],
// [Executor.JobRetryNow]). They select jobs by IDs or, when IDs is nil, by
// Filter; of those, an action changes only the jobs whose status it applies
// to and leaves the others as they are.
type JobActParams struct {
	// IDs selects these jobs; IDs that name no job are ignored.
	IDs []string
	// Filter selects jobs when IDs is nil.
	Filter JobFilter
	// Now is the current time.
	Now time.Time
	// Retries is, for JobRequeue, the fresh retry budget: MaxRetries
	// becomes Attempt + Retries, so the job may run Retries + 1 more times.
	Retries int
}

// JobHeldParams are the params of [Executor.JobHeld].
type JobHeldParams struct {
	// ClientID is the client asking.
	ClientID string
	// IDs are the jobs it is running.
	IDs []string
}

// RequeuedError is the message of the entry JobRequeue appends to a job's
// Errors, so that its history shows it was requeued.
const RequeuedError = "requeued"

// JobCleanParams are the params of [Executor.JobClean].
type JobCleanParams struct {
	// Status is the final status of the jobs to delete.
	Status JobStatus
	// Before: jobs whose FinalizedAt is before it are deleted.
	Before time.Time
	// Limit is the most jobs to delete in one call; at least 1.
	Limit int
	// Topics and Queues, when not empty, narrow the jobs deleted to those
	// of one of these topics and in one of these queues; NotTopics and
	// NotQueues leave out the jobs of these topics and queues. A cleaner
	// applies retention per topic and per queue with them.
	Topics, Queues       []string
	NotTopics, NotQueues []string
}
