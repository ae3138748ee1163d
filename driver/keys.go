package driver

import (
	"context"
	"time"
)

// KeyExecutor holds the operations on the limits per topic and per key, and
// on sequences, which [Executor.JobClaim] obeys when its params say
// Keyed. Every [Executor] implements it.
type KeyExecutor interface {
	// LimitsSet replaces the stored limits of one scope, creating them if
	// needed, and returns them as stored. Limits whose every field is
	// zero remove the scope's row and its keys' (a rate window in use is
	// forgotten).
	LimitsSet(ctx context.Context, params *LimitsSetParams) (*Limits, error)

	// LimitsList returns the stored limits of every scope, sorted by
	// scope kind (queues first) and name, each with its keys sorted.
	LimitsList(ctx context.Context, params *LimitsListParams) ([]*Limits, error)

	// KeyLoad returns the keys of one queue's jobs that are pending or
	// processing, with how many of each, keys with the most jobs first.
	KeyLoad(ctx context.Context, params *KeyLoadParams) ([]*KeyCount, error)

	// SequenceAhead returns the job that holds the job ID in its
	// sequence: the first job of its queue and key with a smaller ID
	// that is pending or processing, or failed for good under
	// [SequenceHold]. nil when none does or when the job is in no
	// sequence, [ErrNotFound] when there is no such job.
	SequenceAhead(ctx context.Context, params *SequenceAheadParams) (*JobRow, error)

	// KeyUse returns how much of its limits one key of a scope uses: its
	// processing jobs in the scope, and its rate window as stored.
	KeyUse(ctx context.Context, params *KeyUseParams) (*KeyUse, error)

	// SequencedQueues returns, sorted, the queues that hold jobs of a
	// sequence that are pending, processing or failed: their claims are
	// best made Keyed, which finds each sequence's next job by key where a
	// claim in claim order would walk past every job its sequence holds.
	SequencedQueues(ctx context.Context, params *SequencedQueuesParams) ([]string, error)
}

// SequencedQueuesParams are the params of [KeyExecutor.SequencedQueues].
type SequencedQueuesParams struct{}

// MaxKeyLen is the longest key a job may have, in bytes.
const MaxKeyLen = 255

// SequencePolicy puts a job in the sequence of its key in its queue and
// says what a job of the sequence that fails for good does to the rest.
// The jobs of one sequence run one at a time in the order of their IDs
// (the order they were enqueued in, within one client): a claim takes a
// job of a sequence only when no job of it with a smaller ID is pending,
// processing, or, under SequenceHold, failed.
type SequencePolicy string

// The sequence policies.
const (
	// SequenceHold holds the rest of the sequence behind a job that
	// failed for good, until it is requeued, cancelled or deleted.
	SequenceHold SequencePolicy = "hold"
	// SequenceContinue lets the rest of the sequence go on past a job
	// that failed for good.
	SequenceContinue SequencePolicy = "continue"
)

// Valid reports whether p is one of the policies.
func (p SequencePolicy) Valid() bool { return p == SequenceHold || p == SequenceContinue }

// ScopeKind is what a scope of limits covers: the jobs of a queue or of a
// topic.
type ScopeKind string

// The kinds of scope.
const (
	// ScopeQueue covers the jobs of one queue, whatever their topic.
	ScopeQueue ScopeKind = "queue"
	// ScopeTopic covers the jobs of one topic, in whatever queue.
	ScopeTopic ScopeKind = "topic"
)

// Scope is the jobs that limits apply to: those of one queue or of one
// topic.
type Scope struct {
	Kind ScopeKind `json:"kind"`
	Name string    `json:"name"`
}

// Limits are the stored limits of one scope beyond a queue's state (see
// [QueueState]): those of the whole scope for a topic, those of each key,
// a sequence policy for the scope's keyed jobs, and fair sharing between
// keys. A zero field sets no limit.
type Limits struct {
	// Scope is what the limits apply to.
	Scope Scope `json:"scope"`
	// MaxRunning, RateLimit and RatePeriod limit the jobs of the whole
	// scope, as a queue's state does a queue's; for a topic only (a
	// queue's are in its QueueState).
	MaxRunning int           `json:"max_running,omitempty"`
	RateLimit  int           `json:"rate_limit,omitempty"`
	RatePeriod time.Duration `json:"rate_period,omitempty"`
	// KeyMaxRunning, KeyRateLimit and KeyRatePeriod limit the jobs of each
	// key of the scope, unless Keys says otherwise for the key.
	KeyMaxRunning int           `json:"key_max_running,omitempty"`
	KeyRateLimit  int           `json:"key_rate_limit,omitempty"`
	KeyRatePeriod time.Duration `json:"key_rate_period,omitempty"`
	// Sequence, when not empty, is the sequence policy of the scope's jobs
	// enqueued with a key and without one of their own.
	Sequence SequencePolicy `json:"sequence,omitempty"`
	// Fair makes claims of the queue take due jobs round-robin across
	// keys (Keys' weights apply), the jobs without a key taking turns as
	// one more key; for a queue only.
	Fair bool `json:"fair,omitempty"`
	// Keys are the keys whose limits or weight differ from the
	// defaults, sorted by key.
	Keys []KeyLimit `json:"keys,omitempty"`
	// UpdatedAt is when the limits last changed.
	UpdatedAt time.Time `json:"updated_at"`
}

// KeyLimit are the limits of one key, in place of its scope's defaults:
// a zero field falls back to the default.
type KeyLimit struct {
	Key        string        `json:"key"`
	MaxRunning int           `json:"max_running,omitempty"`
	RateLimit  int           `json:"rate_limit,omitempty"`
	RatePeriod time.Duration `json:"rate_period,omitempty"`
	// Weight is how many jobs of the key a fair claim takes per turn;
	// 0 is 1.
	Weight int `json:"weight,omitempty"`
}

// Keyed reports whether the limits ask claims of their scope to look at
// keys or topics: every field but UpdatedAt.
func (l *Limits) Keyed() bool {
	return l.MaxRunning > 0 || l.RateLimit > 0 || l.KeyMaxRunning > 0 || l.KeyRateLimit > 0 ||
		l.Sequence != "" || l.Fair || len(l.Keys) > 0
}

// LimitsSetParams are the params of [KeyExecutor.LimitsSet].
type LimitsSetParams struct {
	// Limits replace the scope's; their UpdatedAt is ignored.
	Limits Limits
	// Now is stored as UpdatedAt.
	Now time.Time
}

// LimitsListParams are the params of [KeyExecutor.LimitsList].
type LimitsListParams struct{}

// KeyLoadParams are the params of [KeyExecutor.KeyLoad].
type KeyLoadParams struct {
	// Queue is the queue whose keys to count.
	Queue string
	// Limit is the most keys to return; at least 1.
	Limit int
}

// KeyCount is how many of a queue's jobs with one key are pending and
// processing.
type KeyCount struct {
	Key        string `json:"key"`
	Pending    int    `json:"pending"`
	Processing int    `json:"processing"`
}

// SequenceAheadParams are the params of [KeyExecutor.SequenceAhead].
type SequenceAheadParams struct {
	// ID is the job whose sequence to look at.
	ID string
}

// KeyUseParams are the params of [KeyExecutor.KeyUse].
type KeyUseParams struct {
	// Scope and Key are the key whose use to read.
	Scope Scope
	Key   string
}

// KeyUse is how much of its limits one key of a scope uses.
type KeyUse struct {
	// Running is how many of the scope's jobs with the key are
	// processing.
	Running int
	// WindowStart and WindowCount are the key's rate window: when it
	// started (zero for never) and how many claims it counted.
	WindowStart time.Time
	WindowCount int
}
