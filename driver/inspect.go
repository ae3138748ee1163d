package driver

import (
	"encoding/json"
	"time"
)

// JobFilter selects jobs by their columns. Every field that is set narrows
// the selection; the zero value selects every job. Time ranges include
// their start and exclude their end.
type JobFilter struct {
	// Statuses, when not empty, selects jobs with one of these statuses.
	Statuses []JobStatus
	// Topics, when not empty, selects jobs of one of these topics.
	Topics []string
	// Queues, when not empty, selects jobs in one of these queues.
	Queues []string
	// UniqueKey, when not empty, selects jobs with this unique key.
	UniqueKey string
	// CreatedFrom and CreatedBefore, when not zero, bound CreatedAt.
	CreatedFrom, CreatedBefore time.Time
	// RunAtFrom and RunAtBefore, when not zero, bound RunAt.
	RunAtFrom, RunAtBefore time.Time
	// Tags, when not empty, selects jobs carrying every one of these tags,
	// or, with AnyTag, at least one of them.
	Tags   []string
	AnyTag bool
	// Metadata, when not empty, selects jobs whose metadata has each of
	// these keys with a JSON string value equal to the one given.
	Metadata map[string]string
	// Keys, when not empty, selects jobs with one of these keys (see
	// [JobRow.Key]).
	Keys []string
	// GroupIDs, when not empty, selects the jobs of these groups (see
	// [JobRow.GroupID]).
	GroupIDs []string
	// IDs, when not empty, selects these jobs.
	IDs []string
	// Payload, when not empty, selects jobs whose payload holds each
	// condition's value at its path (see PayloadMatch).
	Payload []PayloadMatch
}

// PayloadMatch is a condition of JobFilter.Payload: the payload's value
// at Path, the keys of nested objects outermost first, is the JSON scalar
// Value: a string equal to it, a number of equal value, or the same true,
// false or null. A missing key, or a value of another type, does not
// match. The client checks Path (1 to 8 keys of 1 to 64 letters, digits,
// _ or -) and Value (a JSON scalar) before a driver sees them; a Value
// that breaks the text rule matches nothing (see JobFilter.Matchable).
type PayloadMatch struct {
	Path  []string
	Value json.RawMessage
}

// JobListParams are the params of [Executor.JobList].
type JobListParams struct {
	// Filter selects the jobs.
	Filter JobFilter
	// Desc orders the jobs by ID descending (newest first); otherwise
	// ascending. IDs are version 7 UUIDs, so ID order is creation order.
	Desc bool
	// AfterID, when not empty, lists only jobs that come after the job
	// with this ID in the list's order (a cursor). It need not exist.
	AfterID string
	// Offset is how many of the selected jobs to skip; 0 or more.
	Offset int
	// Limit is the most jobs to return; at least 1.
	Limit int
}

// JobListResult is the outcome of [Executor.JobList].
type JobListResult struct {
	// Jobs are the listed jobs, in the list's order.
	Jobs []*JobRow
	// Total is how many jobs Filter selects, ignoring AfterID, Offset and
	// Limit.
	Total int
}

// JobStatsParams are the params of [Executor.JobStats].
type JobStatsParams struct {
	// Filter selects the jobs counted.
	Filter JobFilter
	// Since starts the window of the outcome figures: jobs completed or
	// failed (FinalizedAt) at or after Since.
	Since time.Time
	// Bucket, when not zero, asks for JobStats.Series: the window's
	// outcomes counted per Bucket of FinalizedAt. Buckets are aligned on
	// the Unix epoch: a job belongs to the bucket that starts at its
	// FinalizedAt truncated to a multiple of Bucket. At least a
	// microsecond when set.
	Bucket time.Duration
	// DueAt, when not zero, asks for JobStats.OldestDue: the selected
	// pending jobs due at DueAt (RunAt at or before it) that have waited
	// longest, per queue.
	DueAt time.Time
}

// JobStats is the outcome of [Executor.JobStats].
type JobStats struct {
	// Counts are how many selected jobs there are of each status, topic
	// and queue, one entry per combination that has any, in no particular
	// order.
	Counts []JobCount
	// Completed and Failed count the selected jobs that became completed
	// or failed in the window.
	Completed, Failed int
	// AvgDuration and P95Duration are the mean and 95th percentile
	// (nearest rank: the smallest duration at least 95% of them do not
	// exceed) of FinalizedAt minus AttemptedAt over the jobs completed in
	// the window; zero when there are none.
	AvgDuration, P95Duration time.Duration
	// Series, when Bucket was set, counts per bucket the selected jobs
	// that became completed or failed in the window, oldest bucket first;
	// buckets without any are absent. Nil when Bucket was not set.
	Series []JobBucket
	// OldestDue, when DueAt was set, holds for each queue with a selected
	// pending job due at DueAt the earliest RunAt of such a job; empty,
	// not nil, when no queue has one. Nil when DueAt was not set. Drivers
	// read it through the claim index, one probe per queue and priority
	// that pending jobs have, so that a backlog of any size costs the same.
	OldestDue map[string]time.Time
}

// JobBucket is how many jobs completed and failed in one bucket of time.
type JobBucket struct {
	// Start is when the bucket starts, in UTC.
	Start time.Time
	// Completed and Failed count the jobs that became completed or failed
	// within the bucket.
	Completed, Failed int
}

// JobCount is how many jobs have one status, topic and queue.
type JobCount struct {
	Status JobStatus
	Topic  string
	Queue  string
	Count  int
}

// QueueLoadParams are the params of [Executor.QueueLoad].
type QueueLoadParams struct {
	// Queue is the queue.
	Queue string
	// Now is the current time: pending jobs whose RunAt is at or before it
	// are due.
	Now time.Time
	// Priority, RunAt and ID are a place in claim order, usually a pending
	// job's own: the due pending jobs that a claim takes before it are
	// counted as ahead (the job itself is not).
	Priority int
	RunAt    time.Time
	ID       string
	// Topics, when not empty, counts as ahead only jobs of these topics:
	// those that the clients able to claim the job would claim first.
	Topics []string
	// AheadLimit is the most jobs counted as ahead; at least 1.
	AheadLimit int
}

// QueueLoad is the outcome of [Executor.QueueLoad].
type QueueLoad struct {
	// Running is how many processing jobs of the queue each client holds,
	// by LockedBy; empty, not nil, when none is running.
	Running map[string]int
	// Ahead is how many due pending jobs of the queue come before the
	// place in claim order, at most AheadLimit.
	Ahead int
}
