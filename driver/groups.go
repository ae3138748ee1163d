package driver

import (
	"context"
	"errors"
	"time"
)

// GroupExecutor holds the operations on groups of jobs: workflows (jobs
// that depend on each other, each a named task) and batches (jobs watched
// as one), with the callback jobs inserted when a group is done. Every
// [Executor] implements it.
type GroupExecutor interface {
	// GroupInsert stores a group and inserts its jobs, atomically: the
	// jobs are inserted as [Executor.JobInsertMany] inserts them (none
	// may have a UniqueKey), each with the group's ID as its GroupID. It
	// returns the group and the jobs as stored, in order.
	GroupInsert(ctx context.Context, params *GroupInsertParams) (*GroupInsertResult, error)

	// GroupAdd inserts jobs into an open group, atomically with a check
	// that it is open: [ErrGroupClosed] when it is closed, [ErrNotFound]
	// when there is no such group.
	GroupAdd(ctx context.Context, params *GroupAddParams) ([]*JobRow, error)

	// GroupClose closes an open group, so that it is done once none of
	// its jobs is pending or processing; closing a closed group changes
	// nothing. [ErrNotFound] when there is no such group.
	GroupClose(ctx context.Context, params *GroupCloseParams) (*GroupRow, error)

	// GroupGet returns a group with the counts of its jobs by status;
	// [ErrNotFound] when there is none.
	GroupGet(ctx context.Context, params *GroupGetParams) (*GroupRow, error)

	// GroupList returns groups, newest first, with their counts.
	GroupList(ctx context.Context, params *GroupListParams) ([]*GroupRow, error)

	// GroupSettle inserts the callbacks of every closed group that is done
	// (no job of it pending or processing) and whose callbacks were not
	// inserted yet, marks them inserted with Now, and returns the groups
	// settled. A job's outcome written by [Executor.JobFinalize] with a
	// GroupID settles its group in the same transaction; GroupSettle
	// settles the groups that other writes finished (a rescue, a cancel,
	// a delete). Callers running at once settle each group once.
	GroupSettle(ctx context.Context, params *GroupSettleParams) ([]*GroupRow, error)

	// GroupRetry retries a group, atomically: its failed jobs, and its
	// cancelled jobs that wait for no other, are requeued as
	// [Executor.JobRequeue] requeues them; its cancelled jobs that depend
	// on others wait for them again (policy cancel); and the group is
	// unsettled, so that it settles again once done. It returns the jobs
	// changed; [ErrNotFound] when there is no such group.
	GroupRetry(ctx context.Context, params *GroupRetryParams) ([]*JobRow, error)

	// GroupClean deletes up to Limit settled groups that were settled
	// before Before and have no job left (retention deleted them), and
	// returns how many.
	GroupClean(ctx context.Context, params *GroupCleanParams) (int, error)
}

// ErrGroupClosed is returned when jobs are added to a group that is
// closed.
var ErrGroupClosed = errors.New("group is closed")

// MaxGroupJobs is the most jobs one group may hold.
const MaxGroupJobs = 10_000

// GroupKind is what a group is.
type GroupKind string

// The kinds of groups.
const (
	// GroupWorkflow is a workflow: named tasks that depend on each other.
	GroupWorkflow GroupKind = "workflow"
	// GroupBatch is a batch: jobs watched as one.
	GroupBatch GroupKind = "batch"
)

// GroupOutcome is how a done group ended.
type GroupOutcome string

// The outcomes of a done group.
const (
	// OutcomeSuccess: every job of the group completed.
	OutcomeSuccess GroupOutcome = "success"
	// OutcomeFailure: some job of the group failed for good or was
	// cancelled.
	OutcomeFailure GroupOutcome = "failure"
)

// GroupCallbacks are the jobs inserted when a group is done: OnSuccess
// when every job of it completed, OnFailure when one failed for good or
// was cancelled, OnComplete either way. Each is inserted with CallbackOf
// set to the group's ID, CreatedAt set to the time the group settled, and
// RunAt as far after it as it was after CreatedAt when stored.
type GroupCallbacks struct {
	OnSuccess  []*JobInsert `json:"on_success,omitempty"`
	OnFailure  []*JobInsert `json:"on_failure,omitempty"`
	OnComplete []*JobInsert `json:"on_complete,omitempty"`
}

// GroupRow is a stored group.
type GroupRow struct {
	ID        string    `json:"id"`
	Kind      GroupKind `json:"kind"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	// Open groups take more jobs and are never done.
	Open bool `json:"open"`
	// Callbacks are the group's callback jobs; nil when it has none.
	Callbacks *GroupCallbacks `json:"callbacks,omitempty"`
	// SettledAt is when the group was found done and its callbacks were
	// inserted; zero until then. Outcome is how it ended.
	SettledAt time.Time    `json:"settled_at,omitzero"`
	Outcome   GroupOutcome `json:"outcome,omitempty"`
	// Counts are how many of its jobs there are of each status, as read
	// (GroupGet and GroupList fill them).
	Counts map[JobStatus]int `json:"counts,omitempty"`
	// StartedAt is when the first of its jobs was claimed and FinishedAt
	// when the last finished, zero when none was or while one is live
	// (GroupGet and GroupList fill them).
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
}

// GroupInsertParams are the params of [GroupExecutor.GroupInsert].
type GroupInsertParams struct {
	// Group is the group to store: its ID, Kind, Name, CreatedAt, Open
	// and Callbacks.
	Group GroupRow
	// Jobs are its jobs.
	Jobs []*JobInsert
}

// GroupInsertResult is what [GroupExecutor.GroupInsert] stored.
type GroupInsertResult struct {
	Group *GroupRow
	Jobs  []*JobRow
}

// GroupAddParams are the params of [GroupExecutor.GroupAdd].
type GroupAddParams struct {
	ID   string
	Jobs []*JobInsert
}

// GroupCloseParams are the params of [GroupExecutor.GroupClose].
type GroupCloseParams struct {
	ID string
	// Now is the time a group closed with no live job settles at.
	Now time.Time
}

// GroupGetParams are the params of [GroupExecutor.GroupGet].
type GroupGetParams struct {
	ID string
}

// GroupListParams are the params of [GroupExecutor.GroupList].
type GroupListParams struct {
	// Kind, Name, when not empty, select groups of that kind or name.
	Kind GroupKind
	Name string
	// CreatedFrom and CreatedBefore, when not zero, bound CreatedAt.
	CreatedFrom, CreatedBefore time.Time
	// Limit is the most groups to return; at least 1. AfterID, when not
	// empty, lists the groups created before it (a cursor, newest first).
	Limit   int
	AfterID string
}

// GroupSettleParams are the params of [GroupExecutor.GroupSettle].
type GroupSettleParams struct {
	// Now is the time settled groups are marked with.
	Now time.Time
	// Limit is the most groups to settle in one call; at least 1.
	Limit int
	// IDs, when not empty, limits the call to these groups; those of them
	// that are open, settled already or not done are left as they are.
	IDs []string
}

// GroupRetryParams are the params of [GroupExecutor.GroupRetry].
type GroupRetryParams struct {
	ID string
	// Now and Retries are as in [JobActParams].
	Now     time.Time
	Retries int
	// Callbacks, when not nil, replace the group's callbacks: a retried
	// group settles again, and its callbacks then go in again as new
	// jobs, which need IDs of their own.
	Callbacks *GroupCallbacks
}

// GroupCleanParams are the params of [GroupExecutor.GroupClean].
type GroupCleanParams struct {
	Before time.Time
	Limit  int
}
