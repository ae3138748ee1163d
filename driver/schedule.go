package driver

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Errors of the schedule operations.
var (
	// ErrScheduleNotFound is returned when no schedule has the given kind
	// and name.
	ErrScheduleNotFound = errors.New("sluice: schedule not found")
	// ErrDuplicateSchedule is returned by [ScheduleExecutor.ScheduleInsert]
	// when a schedule of the same kind has the name.
	ErrDuplicateSchedule = errors.New("sluice: duplicate schedule name")
)

// ScheduleKind tells stored schedules, which users manage through the
// client, from the rows that keep the tick state of periodic jobs declared
// in code. Names are unique within a kind.
type ScheduleKind string

// The kinds of schedule rows.
const (
	// ScheduleStored is a schedule created through the client.
	ScheduleStored ScheduleKind = "stored"
	// SchedulePeriodic is the state of a periodic job in a client's
	// Config.
	SchedulePeriodic ScheduleKind = "periodic"
)

// ScheduleExecutor holds the operations on schedules, stored in a table
// beside the jobs. Every [Executor] implements it. The client computes
// every tick; a driver stores and compares times as they are given.
type ScheduleExecutor interface {
	// ScheduleInsert stores a new schedule at Version 1 and returns it. A
	// schedule of the same Kind and Name is an error matching
	// ErrDuplicateSchedule, and nothing is written. LastRunAt and
	// LastJobID are stored as given.
	ScheduleInsert(ctx context.Context, params *ScheduleInsertParams) (*ScheduleRow, error)

	// ScheduleGet returns the schedule of a kind and name, or an error
	// matching ErrScheduleNotFound.
	ScheduleGet(ctx context.Context, params *ScheduleGetParams) (*ScheduleRow, error)

	// ScheduleList returns schedules sorted by Kind, then Name: those of
	// Kind (all kinds if empty) and, when DueBy is not zero, only those
	// whose NextRunAt is set and at or before DueBy.
	ScheduleList(ctx context.Context, params *ScheduleListParams) ([]*ScheduleRow, error)

	// ScheduleUpdate replaces the definition of a schedule (every field
	// but Kind, Name, CreatedAt, LastRunAt, LastJobID and Version) if its
	// Version is still Version, increments the Version, and returns the
	// schedule after the update. It returns nil and no error when no
	// schedule of the Kind and Name has that Version: there is none, or a
	// write came first.
	ScheduleUpdate(ctx context.Context, params *ScheduleUpdateParams) (*ScheduleRow, error)

	// ScheduleDelete deletes a schedule and returns it as it was, or
	// returns an error matching ErrScheduleNotFound.
	ScheduleDelete(ctx context.Context, params *ScheduleDeleteParams) (*ScheduleRow, error)

	// ScheduleTick records a tick of a schedule, atomically: if the
	// schedule's Version is still Version, it sets NextRunAt, increments
	// the Version and, when Job is not nil, inserts Job as JobInsertMany
	// would (its UniqueKey set) and sets LastRunAt to Tick and LastJobID
	// to the inserted job's ID, or the live job's if Job was a duplicate.
	// When the Version differs (another client recorded the tick first,
	// or the schedule changed) or the schedule is gone, nothing is
	// written and Matched is false. Of many callers that read one Version
	// and tick at once, at most one matches.
	ScheduleTick(ctx context.Context, params *ScheduleTickParams) (*ScheduleTickResult, error)
}

// ScheduleRow is a schedule as it is stored.
type ScheduleRow struct {
	Kind ScheduleKind
	Name string
	// Cron and TimeZone say when it fires; the client parses them.
	Cron     string
	TimeZone string
	// Topic, Payload (JSON), Queue, Priority and MaxRetries are those of
	// the jobs it enqueues.
	Topic      string
	Payload    json.RawMessage
	Queue      string
	Priority   int
	MaxRetries int
	// Disabled pauses it; CatchUp is its catch-up policy.
	Disabled bool
	CatchUp  string
	// CreatedAt and UpdatedAt are when it was created and last changed.
	CreatedAt time.Time
	UpdatedAt time.Time
	// NextRunAt is the first tick not yet recorded; zero while disabled.
	NextRunAt time.Time
	// LastRunAt is the tick of the last job enqueued, LastJobID its ID;
	// zero and empty before the first.
	LastRunAt time.Time
	LastJobID string
	// Version counts the writes to the schedule, from 1: every update and
	// every tick increments it.
	Version int64
}

// ScheduleInsertParams are the params of [ScheduleExecutor.ScheduleInsert].
type ScheduleInsertParams struct {
	// Schedule is the schedule to store; its Version is ignored.
	Schedule *ScheduleRow
}

// ScheduleGetParams are the params of [ScheduleExecutor.ScheduleGet].
type ScheduleGetParams struct {
	Kind ScheduleKind
	Name string
}

// ScheduleListParams are the params of [ScheduleExecutor.ScheduleList].
type ScheduleListParams struct {
	// Kind selects one kind; empty selects all.
	Kind ScheduleKind
	// DueBy, when not zero, selects schedules with NextRunAt at or before
	// it.
	DueBy time.Time
}

// ScheduleUpdateParams are the params of [ScheduleExecutor.ScheduleUpdate].
type ScheduleUpdateParams struct {
	// Schedule is the new definition, found by its Kind and Name.
	Schedule *ScheduleRow
	// Version is the version the caller read.
	Version int64
}

// ScheduleDeleteParams are the params of [ScheduleExecutor.ScheduleDelete].
type ScheduleDeleteParams struct {
	Kind ScheduleKind
	Name string
}

// ScheduleTickParams are the params of [ScheduleExecutor.ScheduleTick].
type ScheduleTickParams struct {
	Kind ScheduleKind
	Name string
	// Version is the version the caller read.
	Version int64
	// Tick is the tick recorded as LastRunAt when Job is not nil.
	Tick time.Time
	// NextRunAt is the schedule's next tick.
	NextRunAt time.Time
	// Job is the tick's job, nil for a tick skipped without one.
	Job *JobInsert
}

// ScheduleTickResult is the outcome of [ScheduleExecutor.ScheduleTick].
type ScheduleTickResult struct {
	// Matched is true when the tick was recorded.
	Matched bool
	// Job is the insert's result when Matched and a Job was given.
	Job *JobInsertResult
}
