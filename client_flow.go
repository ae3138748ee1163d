package sluice

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/driver"
)

// QueueState is the flow control stored for one queue, shared by every
// client on the database: whether it is paused, and its limits. A queue
// without a stored state runs unlimited.
type QueueState = driver.QueueState

// DependencyPolicy says what a job enqueued with
// EnqueueOptions.DependsOn does when one of its dependencies fails for
// good, is cancelled or is deleted.
type DependencyPolicy = driver.DependencyPolicy

// The dependency policies.
const (
	// DependencyCancel cancels the waiting job, with an error naming the
	// dependency. The default.
	DependencyCancel = driver.DependencyCancel
	// DependencyRun runs the waiting job anyway, once every dependency
	// is final (completed, failed or cancelled) or gone.
	DependencyRun = driver.DependencyRun
)

// MaxDependencies is how many jobs one job may depend on.
const MaxDependencies = 100

// QueueLimits are the limits of a queue, shared by every client on the
// database (see SetQueueLimits). A zero field means no limit.
type QueueLimits struct {
	// MaxRunning is how many of the queue's jobs may run at once, across
	// every client, whatever each client's MaxWorkers.
	MaxRunning int
	// RateLimit is how many of the queue's jobs may start per
	// RatePeriod, across every client; RatePeriod must be set with it.
	RateLimit  int
	RatePeriod time.Duration
}

// PauseQueue pauses queue in every client on the database: within a poll
// interval (at once in this client), no client starts a job of the queue;
// jobs already running finish. Enqueueing into a paused queue works as
// usual. It returns the queue's state.
func (c *Client[TTx]) PauseQueue(ctx context.Context, queue string) (*QueueState, error) {
	return c.setQueue(ctx, "pause queue", queue, func(p *driver.QueueStateSetParams) error {
		paused := true
		p.Paused = &paused
		return nil
	})
}

// ResumeQueue resumes a paused queue in every client on the database, and
// returns the queue's state. Resuming a queue that is not paused changes
// nothing but its state's UpdatedAt.
func (c *Client[TTx]) ResumeQueue(ctx context.Context, queue string) (*QueueState, error) {
	st, err := c.setQueue(ctx, "resume queue", queue, func(p *driver.QueueStateSetParams) error {
		paused := false
		p.Paused = &paused
		return nil
	})
	if r := c.run.Load(); err == nil && r != nil {
		r.wake(queue, true)
	}
	return st, err
}

// SetQueueLimits sets the limits of queue for every client on the
// database, replacing any it had, and returns the queue's state. Every
// client reads the queue states once a poll interval (this one at once),
// and from then on the limits hold across processes: on Postgres the
// claims of a limited queue take turns on a row lock, so two clients
// cannot both take the last free slot; SQLite writes one transaction at a
// time. A changed rate limit
// starts a new window at the next claim. Limits that are negative, or a
// RateLimit without a RatePeriod, return an *OptionsError and change
// nothing.
func (c *Client[TTx]) SetQueueLimits(ctx context.Context, queue string, l QueueLimits) (*QueueState, error) {
	return c.setQueue(ctx, "set queue limits", queue, func(p *driver.QueueStateSetParams) error {
		if err := checkRate("", l.MaxRunning, l.RateLimit, l.RatePeriod); err != nil {
			return err
		}
		p.MaxRunning = &l.MaxRunning
		p.Rate = &driver.QueueRate{Limit: l.RateLimit, Period: l.RatePeriod}
		return nil
	})
}

// QueueStates returns the stored state of every queue that has one, sorted
// by queue: the paused queues and those with limits.
func (c *Client[TTx]) QueueStates(ctx context.Context) ([]*QueueState, error) {
	states, err := c.exec.QueueStateList(ctx, &driver.QueueStateListParams{})
	if err != nil {
		return nil, fmt.Errorf("queue states: %w", err)
	}
	return states, nil
}

// setQueue validates queue, lets set fill in the change, and stores it.
func (c *Client[TTx]) setQueue(ctx context.Context, op, queue string, set func(p *driver.QueueStateSetParams) error) (*QueueState, error) {
	if !queueNameRE.MatchString(queue) {
		return nil, fmt.Errorf("%s: %w", op, &OptionsError{Field: "queue",
			Reason: fmt.Sprintf("%q: queue names are 1 to 128 letters, digits, or _ . : -", queue)})
	}
	p := &driver.QueueStateSetParams{Queue: queue, Now: c.now()}
	if err := set(p); err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, queue, err)
	}
	st, err := c.exec.QueueStateSet(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, queue, err)
	}
	if r := c.run.Load(); r != nil {
		r.noteFlow(queue)
	}
	return st, nil
}

// checkDependencies validates the dependencies of an enqueue and returns
// them without repeats, and the policy.
func checkDependencies(deps []string, policy DependencyPolicy) ([]string, DependencyPolicy, error) {
	if len(deps) == 0 {
		if policy != "" {
			return nil, "", &OptionsError{Field: "OnDependencyFailure", Reason: "set without DependsOn"}
		}
		return nil, "", nil
	}
	if policy == "" {
		policy = DependencyCancel
	}
	if !policy.Valid() {
		return nil, "", &OptionsError{Field: "OnDependencyFailure",
			Reason: fmt.Sprintf("%q is not %q or %q", policy, DependencyCancel, DependencyRun)}
	}
	out := make([]string, 0, len(deps))
	for _, id := range deps {
		u, err := uuid.Parse(id)
		if err != nil || len(id) != 36 {
			return nil, "", &OptionsError{Field: "DependsOn", Reason: fmt.Sprintf("%q is not a job ID", id)}
		}
		id = u.String() // lowercase
		if slices.Contains(out, id) {
			continue
		}
		if len(out) == MaxDependencies {
			return nil, "", &OptionsError{Field: "DependsOn", Reason: fmt.Sprintf("more than %d jobs", MaxDependencies)}
		}
		out = append(out, id)
	}
	return out, policy, nil
}

// releaseLimit is the most waiting jobs one pass of the release loop
// settles.
const releaseLimit = 500

// minFlowInterval is the shortest interval of the flow loop (which reads
// the queue states and releases waiting jobs), which otherwise runs once a
// poll interval: a very short PollInterval must not make every client
// read them thousands of times a second.
const minFlowInterval = 50 * time.Millisecond

// flowState is what a run knows of the stored flow control: the queues
// that have a state, whose claims must obey it, and the scopes with limits
// (SetKeyLimits, SetTopicLimits), which make claims keyed. A nil
// *flowState (none read yet, or the last read failed) makes every claim
// obey all of it, which is always right, only dearer.
type flowState struct {
	queues map[string]bool
	// keyed are the queues whose claims must obey stored limits: those
	// with limits of their own, and those holding jobs of sequences;
	// keyedAll is true when a topic the client works has limits, which
	// any queue may hold jobs of.
	keyed    map[string]bool
	keyedAll bool
}

// readFlow reads the queue states and the limits, for the claims that
// follow.
func (r *run) readFlow(ctx context.Context) {
	for {
		// A state this client stores while the read runs (noteFlow,
		// noteKeyed) may be missing from what the read sees: then the
		// read's state is dropped, and read again.
		notes, old := r.flowNotes.Load(), r.flow.Load()
		fs, err := r.readFlowState(ctx)
		if err != nil {
			if ctx.Err() == nil {
				r.cfg.Logger.Warn("sluice: cannot read the queue states and limits; claims obey them all", "error", err)
			}
			r.flow.Store(nil)
			return
		}
		if r.flowNotes.Load() == notes && r.flow.CompareAndSwap(old, fs) {
			return
		}
	}
}

// readFlowState reads the queue states and limits into a flow state.
func (r *run) readFlowState(ctx context.Context) (*flowState, error) {
	states, err := r.exec.QueueStateList(ctx, &driver.QueueStateListParams{})
	var limits []*Limits
	var sequenced []string
	if err == nil {
		limits, err = r.exec.LimitsList(ctx, &driver.LimitsListParams{})
	}
	if err == nil {
		sequenced, err = r.exec.SequencedQueues(ctx, &driver.SequencedQueuesParams{})
	}
	if err != nil {
		return nil, err
	}
	fs := &flowState{queues: make(map[string]bool, len(states)), keyed: make(map[string]bool)}
	for _, s := range states {
		fs.queues[s.Queue] = true
	}
	for _, l := range limits {
		fs.addKeyed(l.Scope, r.topics)
	}
	for _, q := range sequenced {
		fs.keyed[q] = true // a keyed claim finds each sequence's next job by key
	}
	return fs, nil
}

// addKeyed records that scope has limits, for a client working topics.
func (fs *flowState) addKeyed(scope Scope, topics []string) {
	switch scope.Kind {
	case ScopeQueue:
		fs.keyed[scope.Name] = true
	case ScopeTopic:
		fs.keyedAll = fs.keyedAll || slices.Contains(topics, scope.Name)
	}
}

// flowFor reports whether claims of queue must obey its stored state.
func (r *run) flowFor(queue string) bool {
	fs := r.flow.Load()
	return fs == nil || fs.queues[queue]
}

// keyedFor reports whether claims of queue must obey stored limits.
func (r *run) keyedFor(queue string) bool {
	fs := r.flow.Load()
	return fs == nil || fs.keyedAll || fs.keyed[queue]
}

// noteFlow makes the run's claims of queue obey its state from now on,
// for a state this client just stored.
func (r *run) noteFlow(queue string) {
	r.updateFlow(func(fs *flowState) bool {
		if fs.queues[queue] {
			return false
		}
		fs.queues[queue] = true
		return true
	})
}

// noteKeyed makes the run's claims obey the limits of scope from now on,
// for limits this client just stored.
func (r *run) noteKeyed(scope Scope) {
	r.updateFlow(func(fs *flowState) bool {
		if fs.keyedAll || scope.Kind == ScopeQueue && fs.keyed[scope.Name] {
			return false
		}
		fs.addKeyed(scope, r.topics)
		return true
	})
}

// updateFlow replaces the run's flow state by a copy that change changed,
// unless change reports it changed nothing or there is no state (claims
// then obey everything).
func (r *run) updateFlow(change func(fs *flowState) bool) {
	// Counted before the change, so that a read of the states running
	// meanwhile either sees the count change, and reads again, or stores
	// its state before the change is made on it.
	r.flowNotes.Add(1)
	for {
		old := r.flow.Load()
		if old == nil {
			return
		}
		fs := &flowState{queues: maps.Clone(old.queues), keyed: maps.Clone(old.keyed), keyedAll: old.keyedAll}
		if !change(fs) || r.flow.CompareAndSwap(old, fs) {
			return
		}
	}
}

// releaseWaiting settles the waiting jobs whose dependencies allow it (the
// driver looks at every waiting job, or those of groups when there are
// any, releaseLimit per transaction), and wakes the queues of the jobs
// released. It then settles the groups: every one after a pass over every
// job; after a pass over groups, those groups, since two last outcomes
// committing at once may each have left theirs unsettled (groups is nil,
// not empty, for every job). A group in
// which the pass cancelled jobs is noted as finished again, so that the
// jobs after the cancelled ones are settled by the next pass, not at the
// poll.
func (r *run) releaseWaiting(ctx context.Context, groups []string) {
	rows, err := r.exec.JobRelease(ctx, &driver.JobReleaseParams{Now: r.cfg.now(), Limit: releaseLimit, Groups: groups})
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			r.cfg.Logger.Warn("sluice: cannot release waiting jobs", "error", err)
		}
		return
	}
	var cancelled []string
	for _, row := range rows {
		switch {
		case row.Status == StatusPending:
			r.wake(row.Queue, true)
		case row.GroupID != "" && !slices.Contains(cancelled, row.GroupID):
			cancelled = append(cancelled, row.GroupID)
		}
	}
	r.settleGroups(ctx, groups) // a pass over groups cancels in them alone
	if len(cancelled) > 0 {
		for _, g := range cancelled {
			r.finished.add(g)
		}
		select {
		case r.releaseKick <- struct{}{}:
		default: // a pass is asked for already
		}
	}
}

// finishedGroups gathers the IDs of the workflows and batches whose tasks
// finished since it was last taken from.
type finishedGroups struct {
	mu  sync.Mutex
	ids map[string]struct{}
}

// add notes that a task of group id finished.
func (f *finishedGroups) add(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ids == nil {
		f.ids = make(map[string]struct{})
	}
	f.ids[id] = struct{}{}
}

// take returns the groups noted since the last take, and forgets them.
func (f *finishedGroups) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := slices.Collect(maps.Keys(f.ids))
	clear(f.ids)
	return ids
}

// settleGroups inserts the callbacks of the workflows and batches that
// writes other than a worker's outcome finished (a release that cancelled
// a waiting job, a rescue, a cancel, a delete), of ids alone when not nil,
// and wakes their queues.
func (r *run) settleGroups(ctx context.Context, ids []string) {
	groups, err := r.exec.GroupSettle(ctx, &driver.GroupSettleParams{Now: r.cfg.now(), Limit: releaseLimit, IDs: ids})
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			r.cfg.Logger.Warn("sluice: cannot settle workflows and batches", "error", err)
		}
		return
	}
	for _, g := range groups {
		if g.Callbacks == nil {
			continue
		}
		for _, ins := range slices.Concat(g.Callbacks.OnSuccess, g.Callbacks.OnFailure, g.Callbacks.OnComplete) {
			r.wake(ins.Queue, true)
		}
	}
}
