// Package driver is the contract between the sluice client and a database.
//
// The root package drives a [Driver]; it never writes SQL itself. A driver
// wraps one kind of database handle (a *sql.DB for SQLite, a *pgxpool.Pool for
// Postgres) and hands out an [Executor] over the handle itself or over a
// caller's own transaction. Every operation the client needs is a method on
// Executor, so every write automatically has a transactional twin: the same
// method run through [Driver.UnwrapExecutor].
//
// This package imports only the standard library. Drivers import it; nothing
// here imports a driver or the root package. The conformance suite in
// driver/drivertest states each rule below as a test, and every driver runs it.
//
// # Time
//
// The database's own clock is never used. Every time a driver stores or
// compares against arrives in the operation's params, computed by the client
// from its (injectable) clock. Drivers store times with at least microsecond
// precision, in a form that sorts correctly and can be served by an index, and
// return every time in UTC, including those inside Errors.
//
// A time field that is unset (FinalizedAt before a job is final, say) is the
// zero time; an empty Errors or Result is nil, never JSON null, and a job
// without progress has a nil Progress.
//
// # Text
//
// Postgres stores neither the NUL character nor invalid UTF-8 in text, and
// no NUL (the JSON escape \u0000) in jsonb; SQLite stores both, but a job
// must read back the same through every driver. So every text a job
// carries follows one rule, valid UTF-8 without NUL characters, applied in
// one of two ways:
//
//   - Text and JSON a caller chooses (a topic, a unique key, a tag, a
//     progress message; a payload, a result, metadata) are checked with
//     [CheckText] and [CheckJSON] before anything is written, and refused
//     with a typed error when they break the rule: changing them would
//     change what the caller meant. The client checks them in Enqueue,
//     Ack, SetResult and ReportProgress (queue names are plainer still:
//     letters, digits and a few marks), so drivers receive only such text
//     from it.
//   - Text recorded on the caller's behalf (an attempt's error, a panic's
//     stack, a worker's log records) is never refused, since a job must not
//     stay unfinished for the words of its error: [CleanText] replaces what
//     breaks the rule with U+FFFD and cuts the text to size. The client
//     cleans what it records; a driver whose database cannot store such
//     text (pgxdriver) cleans the errors, progress messages and log records
//     it writes too, so that no caller of the driver can make an outcome
//     unwritable.
//
// # Lookups by text
//
// Text an operation finds rows by may come from anywhere (a URL, a form,
// a command line): a job's or a client's ID, a schedule's kind and name, a
// queue, topics, a unique key, tags, metadata keys and values. Such text
// that breaks the text rule is never an error. No stored text equals it
// (the client writes none, and drivers refuse it as a key, below), so
// drivers answer as for text that names nothing stored, one rule for each
// kind of operation, and pgxdriver answers without sending it to Postgres,
// which cannot even compare it with its text:
//
//   - A lookup of one row by key answers its not-found error: JobGet
//     ErrNotFound, ScheduleGet and ScheduleDelete ErrScheduleNotFound.
//   - An operation on the row or claim it names matches nothing: the
//     actions on jobs by ID, JobHeld, JobHeartbeat, JobFinalize,
//     JobProgress, ScheduleUpdate, ScheduleTick, ClientForget, and the
//     IDs of JobChanges.
//   - A filter that requires it selects nothing (JobList, JobStats and
//     the actions by filter; JobClaim and QueueLoad of a queue;
//     ScheduleList of a kind), and in a list of alternatives (topics,
//     queues, tags with AnyTag, IDs) it is one that matches nothing.
//   - A write that would create a row under such a key, which no lookup
//     could find again, refuses it with an error wrapping ErrTextNUL or
//     ErrTextUTF8 and writes nothing: QueueStateSet's queue,
//     ScheduleInsert's kind and name, ClientRecord's ID.
//
// [Matchable], [MatchableAmong], [JobFilter.Matchable] and [CheckKey] are
// the checks both drivers make.
//
// # Fencing
//
// A claim makes a job processing, sets LockedBy to the claiming client's ID,
// AttemptedAt to the time of the claim, and increments Attempt. Attempt never
// decreases (a snooze, or a job handed back by a stopping client, gives the
// run back by raising MaxRetries instead), so (ID, Attempt) names one claim of
// a job for all time, and with LockedBy and AttemptedAt it identifies that
// claim: [Executor.JobFinalize] matches only rows that are still processing
// under the same claim, [Executor.JobProgress] only rows still processing
// under the same (ID, Attempt, LockedBy), and both report which rows they
// matched; [Executor.JobHeartbeat] extends only the claims of one client. A
// row that was rescued, cancelled, deleted or already finalized is left as
// it is.
//
// AttemptedAt is part of the name for claims a database forgets: a claim
// committed without waiting for its write to reach disk (as pgxdriver's
// are) is lost if the server crashes, and the job, pending again at its
// previous Attempt, may be claimed again by the same client under the same
// (ID, Attempt, LockedBy). The new claim's AttemptedAt is later, so the lost
// claim's outcome matches nothing. (A lost claim's progress may show on the
// new claim until the new one reports its own; it changes nothing else.)
//
// # Transactions and cancelled contexts
//
// A driver never commits or rolls back a transaction it did not begin. An
// operation run through UnwrapExecutor on a caller's transaction either
// succeeds, or returns an error after which the caller must roll back: the
// state of the transaction after such an error is not specified (database/sql
// may have rolled it back already, Postgres marks it aborted, pgx may have
// closed the connection). An operation whose context is cancelled, before or
// during the call, returns an error that matches the context's error with
// errors.Is, and nothing it did is visible once the caller rolls back.
// Operations on the handle itself (not a caller's transaction) are atomic: a
// cancelled context leaves either all of the operation's writes or none.
package driver

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"
)

// ErrNotFound is returned by [Executor.JobGet] when no job has the given ID.
var ErrNotFound = errors.New("job not found")

// Driver is a database that can hold sluice jobs. TTx is the driver's
// transaction type, the type a user passes to EnqueueTx, Ack and Nack:
// *sql.Tx for SQLite, pgx.Tx for Postgres.
type Driver[TTx any] interface {
	// Executor returns an executor that runs each operation on the driver's
	// own handle. Operations that write several rows are atomic.
	Executor() Executor

	// UnwrapExecutor returns an executor that runs every operation inside tx.
	// Nothing it writes is visible to others until the caller commits tx, and
	// a rollback discards all of it. The executor never commits or rolls back
	// tx. tx is never nil.
	UnwrapExecutor(tx TTx) Executor

	// Migrate brings the schema up to the newest version the driver knows.
	// It is idempotent and safe to call from several processes at once.
	Migrate(ctx context.Context) error
}

// Notifier is implemented by drivers that can tell a client at once that
// jobs were enqueued, instead of leaving it to poll.
type Notifier interface {
	// Listen calls fn with the queue name each time jobs are enqueued into
	// that queue, until ctx ends or the returned stop function is called.
	// fn must not block. Notifications are hints: they may be lost, repeated
	// or arrive before the enqueuing transaction commits (Committed is
	// false then), and a client must still poll.
	Listen(ctx context.Context, fn func(Notification)) (stop func(), err error)
}

// Maintainer is implemented by drivers whose storage needs care that the
// database may not give it in time, such as vacuuming a Postgres table that
// every claim and completion updates. A running client calls Maintain once,
// in a goroutine of its own, and it returns when ctx ends. It logs what it
// does and what it cannot do through logger, and never fails the client.
type Maintainer interface {
	Maintain(ctx context.Context, logger *slog.Logger)
}

// Notification tells a listener that a queue has new jobs.
type Notification struct {
	// Queue is the queue the jobs were enqueued into.
	Queue string
	// Committed is true when the jobs are known to be visible to other
	// connections, false when they were enqueued in a transaction that may
	// not have committed yet.
	Committed bool
}

// Executor runs the operations the client needs, either on the driver's own
// handle or inside a caller's transaction (see [Driver.UnwrapExecutor]).
//
// Methods take a pointer to a params struct so that fields can be added
// without breaking drivers or callers. Params are never modified.
type Executor interface {
	// JobInsertMany inserts jobs in the order given and returns one result
	// per job, in the same order. A job whose UniqueKey is not empty and
	// equals the UniqueKey of a live (pending or processing) job is not
	// inserted: its result carries the existing job with Duplicate set. Two
	// jobs of the same call with the same UniqueKey behave as if inserted one
	// after the other. A job whose ID already exists is an error. Either
	// every job is inserted or, on error, none.
	JobInsertMany(ctx context.Context, params *JobInsertManyParams) ([]JobInsertResult, error)

	// JobClaim claims up to Limit pending jobs of one queue whose RunAt is
	// at or before Now and whose Topic is one of Topics, in order of
	// Priority (smaller first), then RunAt, then ID. Each claimed job becomes
	// processing with LockedBy and AttemptedBy set to ClientID, LockedUntil
	// to LockedUntil, AttemptedAt to Now, and Attempt incremented by one.
	// It returns the claimed jobs as they are after the claim, in claim
	// order. A job is claimed by at most one caller, however many claim at
	// once.
	//
	// With Flow set, the queue's stored state (see [FlowExecutor]) bounds
	// the claim: a paused queue yields nothing; with MaxRunning, the claim
	// leaves at most MaxRunning of the queue's jobs processing; with a rate
	// limit, it takes at most what is left of RateLimit in the current
	// window (which starts at the first such claim at or after the previous
	// window's end, and lasts RatePeriod), and counts what it took.
	// Claimers with Flow set running at once, through any number of
	// clients, never exceed either limit together. Without Flow, the claim
	// ignores the state and costs what it did before queues had one.
	JobClaim(ctx context.Context, params *JobClaimParams) ([]*JobRow, error)

	// JobFinalize ends claims: each item moves a job that is still
	// processing under the claim (ID, Attempt, LockedBy) to a new status,
	// as the item says. It returns, in the same order, whether each item
	// matched. Items that do not match change nothing.
	JobFinalize(ctx context.Context, params *JobFinalizeParams) ([]bool, error)

	// JobProgress sets the Progress, the Logs, or both, of running jobs:
	// each item sets them on a job that is still processing under the
	// claim (ID, Attempt, LockedBy) and changes nothing else. It returns, in the same order, whether each
	// item matched. Items that do not match change nothing.
	JobProgress(ctx context.Context, params *JobProgressParams) ([]bool, error)

	// JobHeartbeat sets LockedUntil on every job that is processing with
	// LockedBy equal to ClientID (and, when IDs is not nil, whose ID is
	// in IDs), in one statement, and returns how many it extended. A lease
	// that has passed but was not yet rescued is extended too: its holder
	// is alive and nobody has taken the job.
	JobHeartbeat(ctx context.Context, params *JobHeartbeatParams) (int, error)

	// JobRescue takes back up to Limit jobs that are processing with a
	// LockedUntil before Now: their holder is presumed gone. Each has the
	// error Error recorded for its attempt, with the attempt's number,
	// start (AttemptedAt) and client (LockedBy) as they were at the rescue.
	// AttemptedAt and AttemptedBy are kept. A job with retries left (Attempt
	// <= MaxRetries) becomes pending with RunAt set to Now; a job without
	// becomes failed with FinalizedAt set to Now. It returns the jobs as they
	// are after the rescue.
	JobRescue(ctx context.Context, params *JobRescueParams) ([]*JobRow, error)

	// JobGet returns the job with the given ID, or an error matching
	// ErrNotFound.
	JobGet(ctx context.Context, params *JobGetParams) (*JobRow, error)

	// JobList returns the jobs Filter selects, ordered by ID, after
	// AfterID, skipping Offset and at most Limit of them, with the number
	// Filter selects in all.
	JobList(ctx context.Context, params *JobListParams) (*JobListResult, error)

	// JobStats counts the jobs Filter selects by status, topic and queue,
	// and sums up the outcomes of those finalized since Since.
	JobStats(ctx context.Context, params *JobStatsParams) (*JobStats, error)

	// QueueLoad tells how busy one queue is: how many of its jobs each
	// client holds (processing), and how many of its pending jobs due at
	// Now (and of Topics, if given) come before a place in claim order
	// (Priority, then RunAt, then ID), counting at most AheadLimit of them.
	// It reads processing jobs through their leases, so its cost grows
	// with the jobs running, not with the table.
	QueueLoad(ctx context.Context, params *QueueLoadParams) (*QueueLoad, error)

	// JobCancel makes the selected pending and processing jobs, and the
	// failed ones that hold their sequence (see [CancellableSQL]),
	// cancelled, with FinalizedAt set to Now and no claim; a processing
	// job's holder
	// learns it through JobHeld. It returns the changed jobs, sorted by ID.
	JobCancel(ctx context.Context, params *JobActParams) ([]*JobRow, error)

	// JobRequeue makes the selected failed and cancelled jobs pending,
	// due at Now, with a fresh retry budget (see JobActParams.Retries), no
	// FinalizedAt, and an entry for the requeue (Attempt, Now,
	// RequeuedError) appended to Errors. It returns the changed jobs,
	// sorted by ID, and notes each in the log of actions change feeds read
	// (see JobChangesParams.ActedSince).
	JobRequeue(ctx context.Context, params *JobActParams) ([]*JobRow, error)

	// JobDelete deletes the selected jobs that are not processing and
	// returns them as they were, sorted by ID. It notes each in the log of
	// actions change feeds read (see JobChangesParams.ActedSince).
	JobDelete(ctx context.Context, params *JobActParams) ([]*JobRow, error)

	// JobRetryNow makes the selected pending jobs due later than Now due
	// at Now. It returns the changed jobs, sorted by ID.
	JobRetryNow(ctx context.Context, params *JobActParams) ([]*JobRow, error)

	// JobHeld returns which of IDs are still processing under ClientID,
	// sorted. A client asks it about the jobs it runs, to stop those that
	// were cancelled, deleted or taken back.
	JobHeld(ctx context.Context, params *JobHeldParams) ([]string, error)

	// JobClean deletes up to Limit jobs of the final status Status whose
	// FinalizedAt is before Before, and returns how many it deleted.
	// Cleaners running at once delete different jobs and never wait for
	// each other's rows.
	JobClean(ctx context.Context, params *JobCleanParams) (int, error)

	// JobChanges reads, in one call, what a change feed needs to learn
	// which jobs changed since it last looked (see JobChangesParams): the
	// running jobs, some jobs by ID, the jobs of a range of IDs, and the
	// jobs finished recently. Every part is read through an index, so its
	// cost grows with what it returns, not with the table.
	JobChanges(ctx context.Context, params *JobChangesParams) (*JobChanges, error)

	// ClientRecord stores or refreshes a client's record, and prunes the
	// records of clients gone since PruneBefore.
	ClientRecord(ctx context.Context, params *ClientRecordParams) error

	// ClientList returns the recorded clients, sorted by ID.
	ClientList(ctx context.Context, params *ClientListParams) ([]*ClientRow, error)

	// ClientForget deletes a client's record, if any.
	ClientForget(ctx context.Context, params *ClientForgetParams) error

	// ScheduleExecutor holds the operations on stored schedules and on
	// the tick state of periodic jobs.
	ScheduleExecutor

	// FlowExecutor holds the operations of flow control: queue states
	// and waiting jobs.
	FlowExecutor

	// KeyExecutor holds the operations on limits per topic and per key,
	// and on sequences.
	KeyExecutor

	// GroupExecutor holds the operations on workflows and batches.
	GroupExecutor
	// MetricsExecutor holds the operations of the metrics store.
	MetricsExecutor
}

// JobStatus is where a job is in its life: pending, then processing, then
// completed, failed or cancelled. A job waiting to be retried is pending
// with a later RunAt.
type JobStatus string

// The statuses a job can have.
const (
	// StatusPending is a job waiting for its RunAt and a free worker.
	StatusPending JobStatus = "pending"
	// StatusProcessing is a job claimed by a client and being worked.
	StatusProcessing JobStatus = "processing"
	// StatusCompleted is a job whose worker finished it successfully.
	StatusCompleted JobStatus = "completed"
	// StatusFailed is a job that used up its retries: the dead letter,
	// kept for inspection.
	StatusFailed JobStatus = "failed"
	// StatusCancelled is a job that will not run (again) by request.
	StatusCancelled JobStatus = "cancelled"
)

// Valid reports whether s is one of the five statuses.
func (s JobStatus) Valid() bool {
	switch s {
	case StatusPending, StatusProcessing, StatusCompleted, StatusFailed, StatusCancelled:
		return true
	}
	return false
}

// Finished reports whether s is a final status: completed, failed or
// cancelled.
func (s JobStatus) Finished() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// JobRow is a job as it is stored.
type JobRow struct {
	// ID is the job's UUID (version 7, so IDs sort by creation time).
	ID string `json:"id"`
	// Topic is the job's type; it selects the worker.
	Topic string `json:"topic"`
	// Queue is the named queue the job waits in.
	Queue string `json:"queue"`
	// Priority orders jobs within a queue: smaller runs first.
	Priority int `json:"priority"`
	// Payload is the job's arguments as JSON.
	Payload json.RawMessage `json:"payload"`
	// Status is where the job is in its life.
	Status JobStatus `json:"status"`
	// Attempt is how many times the job has been claimed, the current run
	// included; 0 before its first run.
	Attempt int `json:"attempt"`
	// MaxRetries is how many times the job may be retried after its first
	// attempt fails.
	MaxRetries int `json:"max_retries"`
	// RunAt is when the job may run next.
	RunAt time.Time `json:"run_at"`
	// CreatedAt is when the job was enqueued.
	CreatedAt time.Time `json:"created_at"`
	// AttemptedAt is when the latest attempt was claimed; zero before the
	// first.
	AttemptedAt time.Time `json:"attempted_at,omitzero"`
	// AttemptedBy is the ID of the client that claimed the latest attempt,
	// kept after the attempt ends; empty before the first. With
	// AttemptedAt and FinalizedAt it tells when and where the last attempt
	// ran.
	AttemptedBy string `json:"attempted_by,omitempty"`
	// FinalizedAt is when the job reached a final status; zero until then.
	FinalizedAt time.Time `json:"finalized_at,omitzero"`
	// LockedUntil is when the current claim's lease ends; zero unless the
	// job is processing.
	LockedUntil time.Time `json:"locked_until,omitzero"`
	// LockedBy is the ID of the client holding the claim; empty unless the
	// job is processing.
	LockedBy string `json:"locked_by,omitempty"`
	// UniqueKey, when not empty, allows at most one live (pending or
	// processing) job with the same key.
	UniqueKey string `json:"unique_key,omitempty"`
	// Errors are the errors of earlier attempts, oldest first. Drivers keep
	// at most MaxErrorsKept of them.
	Errors []AttemptError `json:"errors,omitempty"`
	// Result is the JSON a worker stored when it completed the job, if any.
	Result json.RawMessage `json:"result,omitempty"`
	// Progress is the latest progress stored while the job ran, if any,
	// kept after the attempt ends.
	Progress *JobProgress `json:"progress,omitempty"`
	// Tags are the labels the job was enqueued with, in order; nil when
	// none.
	Tags []string `json:"tags,omitempty"`
	// Metadata is the JSON object the job was enqueued with (and that
	// enqueue middleware added to); nil when none.
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// Logs are the records its workers logged (see [LogRecord]), oldest
	// first, kept across attempts within the client's bounds; nil when
	// none. LogsDropped counts the older records dropped to stay within
	// them.
	Logs        []LogRecord `json:"logs,omitempty"`
	LogsDropped int         `json:"logs_dropped,omitempty"`
	// DependsOn are the IDs of the jobs it was enqueued to wait for; nil
	// when none. Waiting is true while it still waits for them: it is
	// pending, and no claim takes it (see [FlowExecutor.JobRelease]).
	DependsOn []string `json:"depends_on,omitempty"`
	Waiting   bool     `json:"waiting,omitempty"`
	// Key is the key the job was enqueued with, empty when none: the
	// customer, account or order its limits per key count it under (see
	// [KeyLimits]).
	Key string `json:"key,omitempty"`
	// Sequence, when not empty, puts the job in the sequence of its key
	// in its queue: the jobs of one sequence run one at a time, in the
	// order of their IDs (see [SequencePolicy]).
	Sequence SequencePolicy `json:"sequence,omitempty"`
	// GroupID is the workflow or batch the job belongs to, empty for none
	// (see [GroupExecutor]); Task is its name in a workflow.
	GroupID string `json:"group_id,omitempty"`
	Task    string `json:"task,omitempty"`
	// CallbackOf is the group whose callback the job is, empty for none.
	CallbackOf string `json:"callback_of,omitempty"`
}

// MaxErrorsKept is how many attempt errors a driver keeps per job; older
// ones are dropped first, so a job failing forever cannot grow without limit.
const MaxErrorsKept = 20

// AttemptError is the error of one attempt.
type AttemptError struct {
	// Attempt is the attempt that failed, counting from 1.
	Attempt int `json:"attempt"`
	// At is when the attempt failed.
	At time.Time `json:"at"`
	// Error is the error's message.
	Error string `json:"error"`
	// Trace is the stack of a panic, if the attempt panicked.
	Trace string `json:"trace,omitempty"`
	// StartedAt is when the attempt was claimed, and ClientID the client
	// that ran it; both are unset for entries that record no run (a
	// requeue).
	StartedAt time.Time `json:"started_at,omitzero"`
	ClientID  string    `json:"client_id,omitempty"`
}

// JobInsertManyParams are the params of [Executor.JobInsertMany].
type JobInsertManyParams struct {
	// Jobs are the jobs to insert.
	Jobs []*JobInsert
}

// JobInsert is one job to insert. All fields are set by the client; the
// driver stores them as they are.
type JobInsert struct {
	ID         string
	Topic      string
	Queue      string
	Priority   int
	Payload    []byte
	MaxRetries int
	RunAt      time.Time
	CreatedAt  time.Time
	// UniqueKey is empty for a job that is not unique.
	UniqueKey string
	// Tags are the job's tags (nil for none) and Metadata its metadata, a
	// JSON object (nil for none), both checked by the client.
	Tags     []string
	Metadata []byte
	// DependsOn, when not empty, are the IDs of jobs this one waits for:
	// it is stored waiting, pending but claimed by no one, until
	// [FlowExecutor.JobRelease] releases or cancels it, as
	// OnDependencyFailure (then required) says.
	DependsOn           []string
	OnDependencyFailure DependencyPolicy
	// Key is the job's key, empty for none, and Sequence its sequence
	// policy, empty for a job in no sequence (which needs a Key).
	Key      string
	Sequence SequencePolicy
	// GroupID and Task are the job's group and its task name in it, and
	// CallbackOf the group it is a callback of; empty for none. Only
	// [GroupExecutor] sets them.
	GroupID    string `json:"group_id,omitempty"`
	Task       string `json:"task,omitempty"`
	CallbackOf string `json:"callback_of,omitempty"`
}

// JobInsertResult is the outcome of inserting one job.
type JobInsertResult struct {
	// Job is the inserted job, or the existing live job when Duplicate.
	Job *JobRow
	// Duplicate is true when a live job with the same UniqueKey already
	// existed and nothing was inserted.
	Duplicate bool
}

// JobClaimParams are the params of [Executor.JobClaim].
type JobClaimParams struct {
	// ClientID is the claiming client; it becomes LockedBy.
	ClientID string
	// Queue is the queue to claim from.
	Queue string
	// Topics are the topics the client has workers for. Jobs of other
	// topics are left for other clients. Never empty.
	Topics []string
	// Limit is the most jobs to claim; at least 1.
	Limit int
	// Now is the current time: jobs with RunAt at or before Now are due.
	Now time.Time
	// LockedUntil is when the new claims' leases end.
	LockedUntil time.Time
	// Flow makes the claim obey the queue's stored state (see JobClaim).
	// A client sets it for the queues it has seen a state for, reading the
	// states once a poll interval, so that queues without one pay nothing
	// for flow control.
	Flow bool
	// Keyed makes the claim obey, besides the queue's state, the stored
	// limits (see [KeyExecutor]) of the queue and of Topics: the limits of
	// each topic and of each key, and fair sharing between keys. A client
	// sets it for the queues it has seen such limits for. Sequences hold
	// in every claim, Keyed or not; a Keyed claim finds their next jobs
	// by key rather than by walking past the jobs they hold.
	Keyed bool
}

// JobFinalizeParams are the params of [Executor.JobFinalize].
type JobFinalizeParams struct {
	// Jobs are the claims to end, each with its outcome.
	Jobs []*JobFinalize
}

// JobFinalize ends one claim.
type JobFinalize struct {
	// ID, Attempt, LockedBy and AttemptedAt name the claim; the job
	// changes only if it is still processing under this claim.
	ID          string
	Attempt     int
	LockedBy    string
	AttemptedAt time.Time
	// Status is the job's new status: completed, failed, cancelled, or
	// pending for a retry or snooze.
	Status JobStatus
	// RunAt is the next run time when Status is pending; ignored otherwise.
	RunAt time.Time
	// FinalizedAt is stored as FinalizedAt when Status is final; ignored
	// otherwise.
	FinalizedAt time.Time
	// Error, when not nil, is appended to the job's Errors.
	Error *AttemptError
	// Result, when not nil, is stored as the job's Result (JSON).
	Result []byte
	// Snooze, when true (Status pending), gives the attempt back: MaxRetries
	// is incremented so the run spends no retry. Attempt and AttemptedAt are
	// kept. A client uses it for a snooze and to hand back a job it stops
	// working before the job finished.
	Snooze bool
	// Logs, when not nil, become the job's logs (the whole of them, as
	// the client holding the claim keeps them), and their count of
	// records logged its JobState.Logged.
	Logs *JobLogs
	// Insert are jobs inserted in the same transaction as this outcome if,
	// and only if, the item matches: a notification of the outcome that
	// a crash can lose only together with the outcome itself. They are
	// inserted as JobInsertMany would insert them; they must not have a
	// UniqueKey.
	Insert []*JobInsert
	// GroupID is the job's group, empty for none. An item with a GroupID
	// whose outcome is final and that matches settles its group in the
	// same transaction when the outcome leaves it done (see
	// [GroupExecutor.GroupSettle]): its callbacks are inserted with the
	// outcome that finished it, once.
	GroupID string
	// Delete, when true with a final Status, deletes the job in the same
	// transaction once the item has recorded its outcome (its retention
	// for that status is none). The deletion selects the job by ID,
	// Status and Attempt, not by the claim: a job of this status and
	// attempt, however it got there, is one its retention deletes anyway.
	Delete bool
}

// JobHeartbeatParams are the params of [Executor.JobHeartbeat].
type JobHeartbeatParams struct {
	// ClientID selects the jobs: those processing with this LockedBy.
	ClientID string
	// IDs, when not nil, narrows the selection to these jobs: the ones
	// the client knows it holds, so that a job it holds only in the
	// database's eyes (its outcome forgotten by a crashed server, or
	// given up on) is left to expire and be rescued. An empty, non-nil
	// IDs extends nothing.
	IDs []string
	// LockedUntil is the new end of their leases.
	LockedUntil time.Time
}

// JobRescueParams are the params of [Executor.JobRescue].
type JobRescueParams struct {
	// Now is the current time; leases that ended before it are expired.
	Now time.Time
	// Error is the error recorded for each rescued job's lost attempt; its
	// Attempt, StartedAt and ClientID fields are ignored and the job's own
	// attempt, AttemptedAt and LockedBy are recorded.
	Error AttemptError
	// Limit is the most jobs to rescue in one call; at least 1.
	Limit int
}

// JobGetParams are the params of [Executor.JobGet].
type JobGetParams struct {
	// ID is the job's ID.
	ID string
}
