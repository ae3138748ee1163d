package driver

import "time"

// JobState is a job as a change feed reads it: where the job is in its
// life, without its payload, errors and result, which a feed that reads
// many jobs a second has no use for.
type JobState struct {
	// ID, Topic and Queue are the job's, as in JobRow.
	ID    string `json:"id"`
	Topic string `json:"topic"`
	Queue string `json:"queue"`
	// Status is where the job is in its life.
	Status JobStatus `json:"status"`
	// Attempt and MaxRetries are the job's claims so far and the retries
	// it may have after the first.
	Attempt    int `json:"attempt"`
	MaxRetries int `json:"max_retries"`
	// RunAt, CreatedAt, AttemptedAt and FinalizedAt are as in JobRow.
	RunAt       time.Time `json:"run_at"`
	CreatedAt   time.Time `json:"created_at"`
	AttemptedAt time.Time `json:"attempted_at,omitzero"`
	FinalizedAt time.Time `json:"finalized_at,omitzero"`
	// LockedBy is the client holding the job; empty unless processing.
	LockedBy string `json:"locked_by,omitempty"`
	// Progress is the job's latest stored progress, if any.
	Progress *JobProgress `json:"progress,omitempty"`
	// Logged is how many records the job's workers have logged over its
	// life, kept or dropped: len(JobRow.Logs) + JobRow.LogsDropped. It only
	// grows, and drivers store it beside the logs (see JobLogs.Logged), so
	// a feed that sees it grow knows the job's logs changed without
	// reading them.
	Logged int `json:"logged,omitempty"`
}

// State returns the job's JobState.
func (j *JobRow) State() *JobState {
	return &JobState{ID: j.ID, Topic: j.Topic, Queue: j.Queue, Status: j.Status, Attempt: j.Attempt,
		MaxRetries: j.MaxRetries, RunAt: j.RunAt, CreatedAt: j.CreatedAt, AttemptedAt: j.AttemptedAt,
		FinalizedAt: j.FinalizedAt, LockedBy: j.LockedBy, Progress: j.Progress, Logged: len(j.Logs) + j.LogsDropped}
}

// JobChangesParams are the params of [Executor.JobChanges]. Each part of
// the result is read only when asked for, and each holds at most Limit
// jobs; which of them a part holds when more qualify is not specified.
type JobChangesParams struct {
	// Running asks for the processing jobs, read through the index of
	// leases: as many as jobs are running, however large the table.
	Running bool
	// IDs asks for these jobs, by primary key; IDs that name no job (or
	// are not job IDs at all) are absent from the result.
	IDs []string
	// CreatedFrom and CreatedBefore, when CreatedBefore is not empty, ask
	// for the jobs whose ID is at or after CreatedFrom and before
	// CreatedBefore, in the order IDs sort (as UUIDs: their bytes, which
	// is the order of their canonical lowercase text), read through the
	// primary key. With IDs that sort by creation time (version 7 UUIDs),
	// these are the jobs created in a span of time.
	CreatedFrom, CreatedBefore string
	// FinalizedSince, when not zero, asks for the finished jobs whose
	// FinalizedAt is at or after it, read through the index of finished
	// jobs.
	FinalizedSince time.Time
	// ActedSince, when not zero, asks for the jobs requeued or deleted
	// (by JobRequeue or JobDelete, at their Now) at or after it, from the
	// log of actions those operations keep for change feeds: a requeue or
	// a delete changes no column a feed finds through an index. The log
	// keeps an entry for at least ActLogRetention.
	ActedSince time.Time
	// Limit is the most jobs each part holds; at least 1.
	Limit int
	// CountOnly, when true, counts the jobs each part asked for would
	// hold, at most Limit, into JobChanges.Counted instead of reading
	// them: through the same indexes and, where the database can, nothing
	// else, so that a feed learns cheaply whether more changed than it
	// reads. IDs is ignored; Acted counts the log's entries, those of
	// deleted jobs included.
	CountOnly bool
}

// JobChanges is the outcome of [Executor.JobChanges]: one part per
// question of the params, each nil when not asked. A job may be in more
// than one part. The parts are read in the order of the fields, each
// seeing every write committed before it starts, so a later part's
// reading of a job is never older than an earlier part's.
type JobChanges struct {
	// Running are the processing jobs.
	Running []*JobState
	// ByID are the jobs of JobChangesParams.IDs that exist.
	ByID []*JobState
	// Created are the jobs of the ID range.
	Created []*JobState
	// Finalized are the jobs finished since FinalizedSince.
	Finalized []*JobState
	// Acted are the jobs acted on since ActedSince that exist, as they are
	// now; Deleted those that do not, with their ID, Topic and Queue only.
	Acted, Deleted []*JobState
	// Counted is, with CountOnly, how many jobs each part asked for would
	// hold, at most Limit; the parts are then nil.
	Counted JobChangeCounts
}

// JobChangeCounts counts the parts of JobChanges (see
// JobChangesParams.CountOnly).
type JobChangeCounts struct {
	// Running, Created, Finalized and Acted count the parts of those
	// names.
	Running, Created, Finalized, Acted int
}

// ActLogRetention is how long the log of actions keeps an entry: JobRequeue
// and JobDelete delete older entries as they add theirs. Claims and
// completions never write the log.
const ActLogRetention = 10 * time.Minute
