package driver

import (
	"context"
	"time"
)

// FlowExecutor holds the operations of flow control: queue states shared
// by every client on the database (pause, concurrency and rate limits),
// which [Executor.JobClaim] obeys, and the release of jobs that wait for
// others. Every [Executor] implements it.
type FlowExecutor interface {
	// QueueStateSet changes the stored state of one queue, creating it
	// if needed: each field of the params that is not nil replaces the
	// stored one, and UpdatedAt becomes Now. It returns the state after
	// the change.
	QueueStateSet(ctx context.Context, params *QueueStateSetParams) (*QueueState, error)

	// QueueStateList returns the stored queue states, sorted by Queue.
	QueueStateList(ctx context.Context, params *QueueStateListParams) ([]*QueueState, error)

	// JobRelease settles the waiting jobs (see [JobInsert.DependsOn])
	// whose dependencies allow it, and returns
	// them as they are after. A waiting job whose dependencies all
	// completed becomes claimable at the RunAt it was enqueued with. One
	// with a dependency that is failed or cancelled, or that no longer
	// exists, is cancelled with FinalizedAt set to Now and an error
	// naming that dependency appended to its Errors when its policy is
	// [DependencyCancel]; with [DependencyRun] it is released once
	// every dependency is final or gone. Others keep waiting. Callers
	// running at once settle each job at most once.
	JobRelease(ctx context.Context, params *JobReleaseParams) ([]*JobRow, error)
}

// QueueState is the stored flow control of one queue. A queue without a
// stored state has none of it: it runs, unlimited.
type QueueState struct {
	// Queue is the queue's name.
	Queue string `json:"queue"`
	// Paused queues are claimed from by no client; jobs already running
	// finish.
	Paused bool `json:"paused"`
	// MaxRunning, when above 0, is how many of the queue's jobs may be
	// processing at once, across every client.
	MaxRunning int `json:"max_running,omitempty"`
	// RateLimit, when above 0, is how many of the queue's jobs may be
	// claimed per RatePeriod, across every client, counted in fixed
	// windows of RatePeriod.
	RateLimit  int           `json:"rate_limit,omitempty"`
	RatePeriod time.Duration `json:"rate_period,omitempty"`
	// UpdatedAt is when the state last changed.
	UpdatedAt time.Time `json:"updated_at"`
}

// QueueStateSetParams are the params of [FlowExecutor.QueueStateSet].
type QueueStateSetParams struct {
	// Queue is the queue whose state changes.
	Queue string
	// Paused, when not nil, pauses or resumes the queue.
	Paused *bool
	// MaxRunning, when not nil, sets the concurrency limit; 0 removes it.
	MaxRunning *int
	// Rate, when not nil, sets the rate limit; a Limit of 0 removes it.
	Rate *QueueRate
	// Now is stored as UpdatedAt.
	Now time.Time
}

// QueueRate is a rate limit: Limit claims per Period.
type QueueRate struct {
	Limit  int
	Period time.Duration
}

// QueueStateListParams are the params of [FlowExecutor.QueueStateList].
type QueueStateListParams struct{}

// DependencyPolicy says what a waiting job does when one of its
// dependencies fails for good, is cancelled or is gone.
type DependencyPolicy string

// The dependency policies.
const (
	// DependencyCancel cancels the waiting job.
	DependencyCancel DependencyPolicy = "cancel"
	// DependencyRun runs the waiting job once every dependency is final.
	DependencyRun DependencyPolicy = "run"
)

// Valid reports whether p is one of the policies.
func (p DependencyPolicy) Valid() bool { return p == DependencyCancel || p == DependencyRun }

// JobReleaseParams are the params of [FlowExecutor.JobRelease].
type JobReleaseParams struct {
	// Now is the current time, the FinalizedAt of the jobs cancelled and
	// the At of their errors.
	Now time.Time
	// Limit is the most waiting jobs to look at in one transaction; at
	// least 1. JobRelease looks at every waiting job, Limit at a time in
	// the order of their IDs, so that jobs still blocked never hide later
	// ones that could be settled.
	Limit int
	// Groups, when not empty, limits the pass to the waiting jobs of these
	// groups (workflows and batches, by ID), such as those of tasks that
	// just finished: the jobs their outcomes may have freed. A pass with
	// no Groups looks at every waiting job; one with an ID that names no
	// group settles nothing of it.
	Groups []string
}

// WaitingRunAt is the RunAt a waiting job is stored with, so that no
// claim reaches it: the start of the year 9999, UTC. Drivers report a
// waiting job's RunAt as the one it was enqueued with.
var WaitingRunAt = time.Date(9999, time.January, 1, 0, 0, 0, 0, time.UTC)

// DependencyError returns the error recorded for a job cancelled because
// of its dependency id, whose status is status (empty when it is gone).
func DependencyError(id string, status JobStatus) string {
	if status == "" {
		return "dependency " + id + " not found"
	}
	return "dependency " + id + " " + string(status)
}
