package sluice

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// MaxKeyBytes is the longest key a job may have (EnqueueOptions.Key), in
// bytes.
const MaxKeyBytes = driver.MaxKeyLen

// SequencePolicy puts a job in the sequence of its key in its queue, and
// says what a job of the sequence that fails for good does to the rest.
// The jobs of one sequence run one at a time, in the order of their IDs:
// the order they were enqueued in (IDs are time-ordered; within one
// client, strictly). A claim takes a job of a sequence only when no job of
// the sequence with a smaller ID is pending, processing, or, under
// SequenceHold, failed. This holds in every claim of every client, across
// lease expiry and rescue: a job whose holder died stays processing until
// it is rescued, and pending until it runs again, and holds the rest all
// along.
type SequencePolicy = driver.SequencePolicy

// The sequence policies.
const (
	// SequenceHold holds the rest of the sequence behind a job that
	// failed for good, until the job is requeued (it then runs first),
	// cancelled or deleted. Explain names the job that holds the rest.
	SequenceHold = driver.SequenceHold
	// SequenceContinue lets the rest of the sequence go on past a job
	// that failed for good.
	SequenceContinue = driver.SequenceContinue
)

// Scope is what stored limits apply to: the jobs of one queue, or of one
// topic in whatever queue (see QueueScope, TopicScope).
type Scope = driver.Scope

// The kinds of Scope.
const (
	// ScopeQueue covers the jobs of one queue.
	ScopeQueue = driver.ScopeQueue
	// ScopeTopic covers the jobs of one topic.
	ScopeTopic = driver.ScopeTopic
)

// QueueScope returns the scope of the jobs of queue.
func QueueScope(queue string) Scope { return Scope{Kind: ScopeQueue, Name: queue} }

// TopicScope returns the scope of the jobs of topic.
func TopicScope(topic string) Scope { return Scope{Kind: ScopeTopic, Name: topic} }

// Limits are the stored limits of one scope beyond a queue's QueueState:
// a topic's own (SetTopicLimits) and those of each key (SetKeyLimits).
type Limits = driver.Limits

// KeyLimits are the limits of each key of a scope, shared by every client
// on the database (see SetKeyLimits). A zero field sets no limit.
type KeyLimits struct {
	// MaxRunning is how many jobs of each key may run at once, across
	// every client.
	MaxRunning int
	// RateLimit is how many jobs of each key may start per RatePeriod,
	// across every client, counted in fixed windows as a queue's rate
	// limit is; RatePeriod must be set with it.
	RateLimit  int
	RatePeriod time.Duration
	// Sequence, when set, puts the scope's jobs enqueued with a key and no
	// policy of their own (EnqueueOptions.Sequence) in the sequence of
	// their key. It applies to jobs enqueued once the enqueuing client
	// has read it (within a poll interval; at once in this client).
	Sequence SequencePolicy
	// Fair makes the claims of the queue take due jobs round-robin across
	// keys, each key as many per turn as its Weight (1 by default), the
	// jobs without a key taking turns as one more key, so that a key with
	// a huge backlog cannot hold up the others. Without it claims take
	// jobs in priority order, passing over keys at their limits. For a
	// queue scope only.
	Fair bool
	// Keys are the keys whose limits or weight differ from the defaults
	// above; a zero field of a KeyLimit falls back to the default.
	Keys map[string]KeyLimit
}

// KeyLimit are one key's limits, in place of its scope's defaults.
type KeyLimit struct {
	// MaxRunning, RateLimit and RatePeriod are as in KeyLimits.
	MaxRunning int
	RateLimit  int
	RatePeriod time.Duration
	// Weight is how many of the key's jobs a fair claim takes per turn;
	// 0 means 1. At most MaxWeight.
	Weight int
}

// MaxWeight is the largest KeyLimit.Weight.
const MaxWeight = 1000

// TopicLimits are the limits of all the jobs of one topic, in whatever
// queue, shared by every client on the database (see SetTopicLimits). A
// zero field sets no limit.
type TopicLimits struct {
	// MaxRunning is how many of the topic's jobs may run at once.
	MaxRunning int
	// RateLimit is how many of the topic's jobs may start per RatePeriod;
	// RatePeriod must be set with it.
	RateLimit  int
	RatePeriod time.Duration
}

// SetKeyLimits sets the limits of each key of scope (a queue or a topic)
// for every client on the database, replacing the scope's key limits,
// sequence policy, fairness and per-key overrides, and returns the scope's
// limits as stored. Zero KeyLimits remove them. A topic's own limits
// (SetTopicLimits) are kept.
//
// The limits hold across processes as a queue's do (SetQueueLimits):
// every client reads them once a poll interval (this one at once), and the
// claims of a limited scope take turns on a row lock on Postgres; SQLite
// writes one transaction at a time. A job counts against the limits of its
// key in its queue's scope and in its topic's. Invalid limits (negative,
// a RateLimit without a RatePeriod of at least 1 ms or the other way
// round, a key that is empty, too long or not text, Fair on a topic)
// return an *OptionsError and change nothing.
func (c *Client[TTx]) SetKeyLimits(ctx context.Context, scope Scope, l KeyLimits) (*Limits, error) {
	return c.setLimits(ctx, "set key limits", scope, func(stored *Limits) error {
		if err := checkKeyLimits(scope, l); err != nil {
			return err
		}
		stored.KeyMaxRunning, stored.KeyRateLimit, stored.KeyRatePeriod = l.MaxRunning, l.RateLimit, l.RatePeriod
		stored.Sequence, stored.Fair = l.Sequence, l.Fair
		stored.Keys = nil
		for _, k := range slices.Sorted(maps.Keys(l.Keys)) {
			kl := l.Keys[k]
			stored.Keys = append(stored.Keys, driver.KeyLimit{Key: k, MaxRunning: kl.MaxRunning,
				RateLimit: kl.RateLimit, RatePeriod: kl.RatePeriod, Weight: kl.Weight})
		}
		return nil
	})
}

// SetTopicLimits sets the limits of all the jobs of topic, in whatever
// queue, for every client on the database, and returns the topic's limits
// as stored. Zero TopicLimits remove them; the topic's key limits
// (SetKeyLimits) are kept. They hold as SetKeyLimits says. Invalid limits
// return an *OptionsError and change nothing.
func (c *Client[TTx]) SetTopicLimits(ctx context.Context, topic string, l TopicLimits) (*Limits, error) {
	return c.setLimits(ctx, "set topic limits", TopicScope(topic), func(stored *Limits) error {
		if err := checkRate("", l.MaxRunning, l.RateLimit, l.RatePeriod); err != nil {
			return err
		}
		stored.MaxRunning, stored.RateLimit, stored.RatePeriod = l.MaxRunning, l.RateLimit, l.RatePeriod
		return nil
	})
}

// StoredLimits returns the stored limits of every scope that has any,
// queues first, then topics, each sorted by name.
func (c *Client[TTx]) StoredLimits(ctx context.Context) ([]*Limits, error) {
	all, err := c.exec.LimitsList(ctx, &driver.LimitsListParams{})
	if err != nil {
		return nil, fmt.Errorf("limits: %w", err)
	}
	return all, nil
}

// KeyCount is how many of a queue's jobs with one key are pending and
// processing.
type KeyCount = driver.KeyCount

// KeyCounts returns the keys of queue's pending and processing jobs with
// how many of each, keys with the most jobs first, at most limit of them
// (at most 10,000; 0 means 100).
func (c *Client[TTx]) KeyCounts(ctx context.Context, queue string, limit int) ([]*KeyCount, error) {
	switch {
	case limit == 0:
		limit = 100
	case limit < 0 || limit > MaxListLimit:
		return nil, fmt.Errorf("key counts: %w", &FilterError{Field: "limit",
			Reason: fmt.Sprintf("%d is not between 0 and %d", limit, MaxListLimit)})
	}
	counts, err := c.exec.KeyLoad(ctx, &driver.KeyLoadParams{Queue: queue, Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("key counts %s: %w", queue, err)
	}
	return counts, nil
}

// setLimits validates scope, reads its stored limits, lets set change
// them, and stores them.
func (c *Client[TTx]) setLimits(ctx context.Context, op string, scope Scope, set func(*Limits) error) (*Limits, error) {
	if err := checkScope(scope); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	all, err := c.exec.LimitsList(ctx, &driver.LimitsListParams{})
	if err != nil {
		return nil, fmt.Errorf("%s %s %s: %w", op, scope.Kind, scope.Name, err)
	}
	stored := &Limits{Scope: scope}
	for _, l := range all {
		if l.Scope == scope {
			stored = l
		}
	}
	if err := set(stored); err != nil {
		return nil, fmt.Errorf("%s %s %s: %w", op, scope.Kind, scope.Name, err)
	}
	l, err := c.exec.LimitsSet(ctx, &driver.LimitsSetParams{Limits: *stored, Now: c.now()})
	if err != nil {
		return nil, fmt.Errorf("%s %s %s: %w", op, scope.Kind, scope.Name, err)
	}
	c.limits.Store(nil) // read them again at the next enqueue that needs them
	if r := c.run.Load(); r != nil {
		r.noteKeyed(scope)
	}
	return l, nil
}

// checkScope returns an *OptionsError for a scope that cannot be stored.
func checkScope(s Scope) error {
	switch {
	case s.Kind == ScopeQueue && !queueNameRE.MatchString(s.Name):
		return &OptionsError{Field: "Scope", Reason: fmt.Sprintf("%q: queue names are 1 to 128 letters, digits, or _ . : -", s.Name)}
	case s.Kind == ScopeTopic && s.Name == "":
		return &OptionsError{Field: "Scope", Reason: "a topic scope needs a topic"}
	case s.Kind == ScopeTopic:
		if err := driver.CheckText(s.Name); err != nil {
			return &OptionsError{Field: "Scope", Reason: "topic " + err.Error()}
		}
		return nil
	case s.Kind != ScopeQueue:
		return &OptionsError{Field: "Scope", Reason: fmt.Sprintf("unknown kind %q: use QueueScope or TopicScope", s.Kind)}
	}
	return nil
}

// checkKeyLimits returns an *OptionsError for key limits that cannot be
// stored for scope.
func checkKeyLimits(scope Scope, l KeyLimits) error {
	if err := checkRate("", l.MaxRunning, l.RateLimit, l.RatePeriod); err != nil {
		return err
	}
	if l.Sequence != "" && !l.Sequence.Valid() {
		return &OptionsError{Field: "Sequence", Reason: fmt.Sprintf("%q is not %q or %q", l.Sequence, SequenceHold, SequenceContinue)}
	}
	if l.Fair && scope.Kind != ScopeQueue {
		return &OptionsError{Field: "Fair", Reason: "fair sharing is between the keys of a queue: use QueueScope"}
	}
	for _, k := range slices.Sorted(maps.Keys(l.Keys)) {
		field := fmt.Sprintf("Keys[%q]", k)
		if err := checkKey(field, k); err != nil {
			return err
		}
		kl := l.Keys[k]
		if err := checkRate(field+".", kl.MaxRunning, kl.RateLimit, kl.RatePeriod); err != nil {
			return err
		}
		if kl.Weight < 0 || kl.Weight > MaxWeight {
			return &OptionsError{Field: field + ".Weight", Reason: fmt.Sprintf("must be between 0 and %d", MaxWeight)}
		}
	}
	return nil
}

// checkRate returns an *OptionsError, its field prefixed by prefix, for a
// concurrency or rate limit that cannot be stored.
func checkRate(prefix string, maxRunning, rate int, period time.Duration) error {
	switch {
	case maxRunning < 0 || maxRunning > math.MaxInt32:
		return &OptionsError{Field: prefix + "MaxRunning", Reason: "must be between 0 and 2^31-1"}
	case rate < 0 || rate > math.MaxInt32:
		return &OptionsError{Field: prefix + "RateLimit", Reason: "must be between 0 and 2^31-1"}
	case rate > 0 && period < time.Millisecond:
		return &OptionsError{Field: prefix + "RatePeriod", Reason: "must be at least 1ms with a RateLimit"}
	case rate == 0 && period != 0:
		return &OptionsError{Field: prefix + "RatePeriod", Reason: "set without a RateLimit"}
	}
	return nil
}

// checkKey returns an *OptionsError naming field for a key that no job
// can have.
func checkKey(field, key string) error {
	switch {
	case key == "":
		return &OptionsError{Field: field, Reason: "empty"}
	case len(key) > MaxKeyBytes:
		return &OptionsError{Field: field, Reason: fmt.Sprintf("%d bytes, more than %d", len(key), MaxKeyBytes)}
	}
	if err := driver.CheckText(key); err != nil {
		return &OptionsError{Field: field, Reason: err.Error()}
	}
	return nil
}

// jobKey returns the key and the sequence policy of a job with args and
// opts: the options' key, else the one args give.
func jobKey(args JobArgs, opts *EnqueueOptions) (string, SequencePolicy, error) {
	key := opts.Key
	if k, ok := args.(KeyedArgs); ok && key == "" {
		key = k.JobKey()
	}
	if key != "" {
		if err := checkKey("Key", key); err != nil {
			return "", "", err
		}
	}
	switch {
	case opts.Sequence == "":
	case !opts.Sequence.Valid():
		return "", "", &OptionsError{Field: "Sequence", Reason: fmt.Sprintf("%q is not %q or %q",
			opts.Sequence, SequenceHold, SequenceContinue)}
	case key == "":
		return "", "", &OptionsError{Field: "Sequence", Reason: "needs a Key: a sequence is the jobs of one key"}
	}
	return key, opts.Sequence, nil
}

// limitsCache is the stored limits as a client last read them.
type limitsCache struct {
	at     time.Time
	scopes map[Scope]*Limits
}

// cachedLimits is what a client keeps of the stored limits, for the
// sequence policies of enqueues.
type cachedLimits = atomic.Pointer[limitsCache]

// resolveSequences sets the sequence policy of the keyed jobs among
// inserts that have none of their own to the one stored for their topic,
// or else their queue. It reads the stored limits through exec when the
// client's copy is older than a poll interval.
func (c *Client[TTx]) resolveSequences(ctx context.Context, exec driver.Executor, inserts []*driver.JobInsert) error {
	need := false
	for _, ins := range inserts {
		need = need || ins.Key != "" && ins.Sequence == ""
	}
	if !need {
		return nil
	}
	cache := c.limits.Load()
	if cache == nil || c.now().Sub(cache.at) > c.cfg.PollInterval {
		all, err := exec.LimitsList(ctx, &driver.LimitsListParams{})
		if err != nil {
			return fmt.Errorf("read the stored limits: %w", err)
		}
		cache = newLimitsCache(all, c.now())
		c.limits.Store(cache)
	}
	for _, ins := range inserts {
		if ins.Key == "" || ins.Sequence != "" {
			continue
		}
		if l := cache.scopes[TopicScope(ins.Topic)]; l != nil && l.Sequence != "" {
			ins.Sequence = l.Sequence
		} else if l := cache.scopes[QueueScope(ins.Queue)]; l != nil {
			ins.Sequence = l.Sequence
		}
	}
	return nil
}

// newLimitsCache returns the cache of all, read at.
func newLimitsCache(all []*Limits, at time.Time) *limitsCache {
	lc := &limitsCache{at: at, scopes: make(map[Scope]*Limits, len(all))}
	for _, l := range all {
		lc.scopes[l.Scope] = l
	}
	return lc
}
