package sluice

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// JobState is a job as a change feed reports it: where it is in its life,
// without its payload, errors and result (Get reads those).
type JobState = driver.JobState

// ChangeKind says what happened to a job, as a change feed saw it.
type ChangeKind string

// The kinds of changes a change feed reports. A feed reads the jobs'
// state once per interval, so a job that went through several states
// within one interval is reported in the last one it was read in.
const (
	// ChangeEnqueued: a new pending job.
	ChangeEnqueued ChangeKind = "enqueued"
	// ChangeStarted: a client claimed the job; Job.Attempt is the new
	// attempt.
	ChangeStarted ChangeKind = "started"
	// ChangeProgressed: the running job's stored progress changed (its
	// logs may have too: see Job.Logged).
	ChangeProgressed ChangeKind = "progressed"
	// ChangeLogged: the running job's workers logged records (see
	// Logger), which its client stored with the job, and its progress
	// stayed. Job.Logged, how many records it has logged, grew; Get reads
	// them (JobRow.Logs). The client stores them at most once per
	// Config.ProgressInterval, so one change may stand for several.
	ChangeLogged ChangeKind = "logged"
	// ChangeRetried: the job is pending again after an attempt: a retry,
	// a snooze, a hand-back at a client's Stop, or a rescue.
	ChangeRetried ChangeKind = "retried"
	// ChangeRequeued: the failed or cancelled job is pending again.
	ChangeRequeued ChangeKind = "requeued"
	// ChangeCompleted, ChangeFailed and ChangeCancelled: the job reached
	// that final status.
	ChangeCompleted ChangeKind = "completed"
	ChangeFailed    ChangeKind = "failed"
	ChangeCancelled ChangeKind = "cancelled"
	// ChangeDeleted: the job is gone. Job is the job as the feed last saw
	// it.
	ChangeDeleted ChangeKind = "deleted"
	// ChangeResync: some changes were not reported, because more jobs
	// changed at once than the feed reads (ChangeFeedConfig.MaxRows), the
	// feed could not read for a while, or the subscriber fell behind and
	// its buffer was full. Refetch what you show. Job is nil.
	ChangeResync ChangeKind = "resync"
	// ChangeReset: the subscription asked to resume after a change the
	// feed no longer has (it restarted, or the change is older than
	// ChangeFeedConfig.History). Refetch what you show. Job is nil.
	ChangeReset ChangeKind = "reset"
)

// Change is one change a change feed reports.
type Change struct {
	// ID is the change's place in the feed. A subscriber that stops can
	// resume after it (WatchOptions.After).
	ID string `json:"id"`
	// Kind is what happened.
	Kind ChangeKind `json:"kind"`
	// Job is the job as the feed read it; nil for ChangeResync and
	// ChangeReset.
	Job *JobState `json:"job,omitempty"`
	// At is when the feed saw the change, by the client's clock.
	At time.Time `json:"at"`
}

// Defaults of ChangeFeedConfig.
const (
	DefaultFeedInterval = time.Second
	DefaultFeedLag      = 5 * time.Second
	DefaultFeedMaxRows  = 5000
	DefaultFeedHistory  = 4096
	DefaultFeedLinger   = 10 * time.Second
)

// ChangeFeedConfig configures a client's change feed (see Client.Watch).
// The zero value means every default.
type ChangeFeedConfig struct {
	// Interval is how often the feed reads what changed, at least 10 ms.
	// Default 1 s.
	Interval time.Duration
	// Lag is how far back in time each read looks again, for the writes
	// that commit after the time they record (a completion written in a
	// batch, a clock a little behind): at least Interval. Default 5 s, or
	// Interval if longer.
	Lag time.Duration
	// MaxRows is the most jobs each part of a read returns (running
	// jobs, jobs created and jobs finished within the lag); when more
	// changed, the feed sends one ChangeResync instead of their changes.
	// Default 5,000.
	MaxRows int
	// History is how many recent changes the feed keeps, so that a
	// subscriber that resumes (WatchOptions.After) gets those it missed.
	// Default 4,096.
	History int
	// Linger is how long the feed keeps reading after its last subscriber
	// leaves, so that one that comes back within it (a browser that
	// reconnects) resumes where it left off. Default 10 s; negative stops
	// the feed as soon as its last subscriber leaves.
	Linger time.Duration
}

// fill fills in the defaults of f and validates it.
func (f *ChangeFeedConfig) fill() error {
	f.Interval = orDefault(f.Interval, DefaultFeedInterval)
	f.Lag = orDefault(f.Lag, max(DefaultFeedLag, f.Interval))
	f.MaxRows = orDefault(f.MaxRows, DefaultFeedMaxRows)
	f.History = orDefault(f.History, DefaultFeedHistory)
	f.Linger = orDefault(f.Linger, DefaultFeedLinger)
	switch {
	case f.Interval < 10*time.Millisecond:
		return &ConfigError{Field: "ChangeFeed.Interval", Reason: "must be at least 10ms"}
	case f.Lag < f.Interval:
		return &ConfigError{Field: "ChangeFeed.Lag", Reason: "must be at least ChangeFeed.Interval"}
	case f.MaxRows < 1:
		return &ConfigError{Field: "ChangeFeed.MaxRows", Reason: "must be at least 1"}
	case f.History < 1:
		return &ConfigError{Field: "ChangeFeed.History", Reason: "must be at least 1"}
	}
	return nil
}

// WatchOptions select the changes a subscription receives. The zero value
// (or nil) receives every change, buffered for DefaultEventBuffer changes.
type WatchOptions struct {
	// IDs, when not empty, selects the changes of these jobs.
	IDs []string
	// Topics, when not empty, selects the changes of jobs of these topics.
	Topics []string
	// After, when not empty, is the ID of the last change the subscriber
	// saw: the subscription first receives the changes since, if the feed
	// still has them, and a ChangeReset otherwise.
	After string
	// Buffer is how many changes the subscription holds before it drops
	// new ones: 0 means DefaultEventBuffer.
	Buffer int
}

// ChangeSubscription receives a change feed's changes (see Client.Watch).
type ChangeSubscription struct {
	// C delivers the changes. It is closed by Close.
	C <-chan Change
	// Start is the ID of the feed's latest change when the subscription
	// joined it: C delivers the changes after it, preceded by those
	// replayed after WatchOptions.After (or a ChangeReset). A subscriber
	// that stops before its first change resumes after Start.
	Start string

	c       chan Change
	ids     map[string]bool
	topics  map[string]bool
	dropped atomic.Uint64
	// resync is set when a change was dropped, so that a ChangeResync is
	// sent before the next one; feed.mu guards it.
	resync    bool
	feed      *feed
	unwatch   func() bool
	closeOnce sync.Once
}

// Dropped returns how many changes were dropped because C was full.
func (s *ChangeSubscription) Dropped() uint64 { return s.dropped.Load() }

// Close ends the subscription and closes C. It is idempotent. When it is
// the feed's last subscription, the feed stops after ChangeFeedConfig.Linger
// (at once, waiting for it, when Linger is negative).
func (s *ChangeSubscription) Close() {
	s.closeOnce.Do(func() {
		if s.unwatch != nil {
			s.unwatch()
		}
		s.feed.leave(s)
	})
}

// wants reports whether s receives ch: every resync and reset, and the job
// changes its filter selects.
func (s *ChangeSubscription) wants(ch *Change) bool {
	if ch.Job == nil {
		return true
	}
	return (s.ids == nil || s.ids[ch.Job.ID]) && (s.topics == nil || s.topics[ch.Job.Topic])
}

// Watch subscribes to the client's change feed: what happens to jobs in
// the database, done by any process (other clients, the command line,
// another host), reported within about ChangeFeedConfig.Interval. The feed
// reads the table once per interval however many subscribe, through
// indexes only and adding nothing to claims and completions: it starts
// with the first subscription and stops after the last (see
// ChangeFeedConfig.Linger). Enqueues and operator actions made through
// this client are reported at once. Changes are sent without blocking: a
// subscriber that falls behind has changes dropped (counted in Dropped)
// and receives a ChangeResync before the next one it gets.
//
// Watch returns once the feed has read the table's state, so every change
// committed after it returns is reported; the error of that first read
// (the database unreachable, say) is returned. The subscription ends when
// ctx ends or Close is called.
//
// What the feed sees: jobs enqueued, started, progressing, logging,
// finished, retried, requeued and deleted. What it does not report: a retry now
// (the job stays pending), the deletes of retention (Config.Retention), and
// states a job passed through within one interval. Jobs whose IDs do not
// sort by creation time (Config.NewJobID other than the default version 7
// UUIDs), and jobs enqueued in a transaction that committed more than the
// lag after the ID was made, are reported from their first claim, not
// when enqueued.
func (c *Client[TTx]) Watch(ctx context.Context, opts *WatchOptions) (*ChangeSubscription, error) {
	if opts == nil {
		opts = &WatchOptions{}
	}
	ch := make(chan Change, orDefault(opts.Buffer, DefaultEventBuffer))
	s := &ChangeSubscription{C: ch, c: ch, feed: &c.feed, ids: set(opts.IDs), topics: set(opts.Topics)}
	ready := c.feed.join(s, opts.After, func() *poller { return newPoller(c) })
	select {
	case <-ready.done:
	case <-ctx.Done():
		s.Close()
		return nil, fmt.Errorf("watch: %w", ctx.Err())
	}
	if ready.err != nil {
		s.Close()
		return nil, fmt.Errorf("watch: %w", ready.err)
	}
	s.unwatch = context.AfterFunc(ctx, s.Close)
	return s, nil
}

// set returns the strings as a set, nil when there are none.
func set(ss []string) map[string]bool {
	if len(ss) == 0 {
		return nil
	}
	m := make(map[string]bool, len(ss))
	for _, s := range ss {
		m[s] = true
	}
	return m
}

// feed fans one poller's changes out to a client's subscriptions and keeps
// the recent ones for those that resume. Its zero value has no poller.
type feed struct {
	mu   sync.Mutex
	subs map[*ChangeSubscription]bool
	// poller reads the table while there are subscriptions; nil
	// otherwise. linger stops it once the last subscription has left.
	poller *poller
	linger *time.Timer
	// current is poller, read without the lock by note.
	current atomic.Pointer[poller]
	// epoch names the poller's run in change IDs; seq counts its changes.
	// ring holds the latest History of them: change n at (n-1) % History.
	epoch string
	seq   uint64
	ring  []Change
}

// readiness is closed once a poller has read the table's first state, or
// failed to.
type readiness struct {
	done chan struct{}
	err  error
}

// join adds s, replaying what it missed since after, and starts a poller
// made by start if none runs. It returns the poller's readiness.
func (f *feed) join(s *ChangeSubscription, after string, start func() *poller) *readiness {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.linger != nil {
		f.linger.Stop()
		f.linger = nil
	}
	if f.poller == nil {
		p := start()
		f.poller = p
		f.current.Store(p)
		f.epoch = strconv.FormatInt(time.Now().UnixNano(), 36)
		f.seq, f.ring = 0, make([]Change, p.cfg.History)
		go p.run(f)
	}
	if f.subs == nil {
		f.subs = make(map[*ChangeSubscription]bool)
	}
	f.subs[s] = true
	s.Start = f.id(f.seq)
	if after != "" {
		f.replay(s, after)
	}
	return f.poller.ready
}

// replay sends s the changes after the change named after, or a
// ChangeReset if the ring no longer holds them all or they do not fit s's
// buffer; f.mu is held.
func (f *feed) replay(s *ChangeSubscription, after string) {
	seq, ok := f.parseID(after)
	oldest := uint64(1)
	if f.seq > uint64(len(f.ring)) {
		oldest = f.seq - uint64(len(f.ring)) + 1
	}
	var missed []Change
	if ok = ok && seq+1 >= oldest; ok {
		for n := seq + 1; n <= f.seq; n++ {
			if ch := &f.ring[(n-1)%uint64(len(f.ring))]; s.wants(ch) {
				missed = append(missed, *ch)
			}
		}
	}
	if !ok || len(missed) > cap(s.c) {
		s.c <- Change{ID: f.id(f.seq), Kind: ChangeReset, At: f.poller.now()}
		return
	}
	for _, ch := range missed {
		s.c <- ch
	}
}

// parseID returns the sequence number of a change ID of this feed's run.
func (f *feed) parseID(id string) (uint64, bool) {
	epoch, n, ok := strings.Cut(id, "-")
	if !ok || epoch != f.epoch {
		return 0, false
	}
	seq, err := strconv.ParseUint(n, 10, 64)
	return seq, err == nil && seq <= f.seq
}

func (f *feed) id(seq uint64) string { return f.epoch + "-" + strconv.FormatUint(seq, 10) }

// leave removes s and stops the poller when s was the last subscription,
// after the linger time.
func (f *feed) leave(s *ChangeSubscription) {
	f.mu.Lock()
	if !f.subs[s] {
		f.mu.Unlock()
		return
	}
	delete(f.subs, s)
	close(s.c)
	if len(f.subs) > 0 || f.poller == nil {
		f.mu.Unlock()
		return
	}
	p := f.poller
	if linger := p.cfg.Linger; linger > 0 {
		f.linger = time.AfterFunc(linger, func() {
			f.mu.Lock()
			stop := len(f.subs) == 0 && f.poller == p
			if stop {
				f.detach()
			}
			f.mu.Unlock()
			if stop {
				p.stop()
			}
		})
		f.mu.Unlock()
		return
	}
	f.detach()
	f.mu.Unlock()
	p.stop()
}

// detach forgets the poller, which the caller stops; f.mu is held.
func (f *feed) detach() {
	f.poller = nil
	f.current.Store(nil)
	f.linger = nil
}

// publish numbers the changes of poller p, keeps them in the ring, and
// sends each to the subscriptions that want it, without blocking. Changes
// of a poller that was detached are dropped.
func (f *feed) publish(p *poller, changes []Change) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.poller != p {
		return
	}
	for _, ch := range changes {
		f.seq++
		ch.ID = f.id(f.seq)
		f.ring[(f.seq-1)%uint64(len(f.ring))] = ch
		for s := range f.subs {
			if s.wants(&ch) {
				f.send(s, ch)
			}
		}
	}
}

// send sends ch to s without blocking, preceded by a ChangeResync if s
// dropped changes before; f.mu is held.
func (f *feed) send(s *ChangeSubscription, ch Change) {
	if s.resync {
		select {
		case s.c <- Change{ID: f.id(f.seq - 1), Kind: ChangeResync, At: ch.At}:
			s.resync = false
		default:
			s.dropped.Add(1)
			return
		}
	}
	select {
	case s.c <- ch:
	default:
		s.dropped.Add(1)
		s.resync = true
	}
}
