package sluice

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// EventKind is what happened to a job.
type EventKind string

// The kinds of events a subscription receives.
const (
	// EventEnqueued: the job was enqueued and committed (jobs enqueued in
	// a caller's transaction are not reported: the client cannot know
	// whether it commits). It comes before any other event of the job
	// from this client: should a worker start the job before Enqueue has
	// returned, the started event waits for it.
	EventEnqueued EventKind = "enqueued"
	// EventStarted: this client started working the job.
	EventStarted EventKind = "started"
	// EventProgressed: the progress this client's worker reported with
	// ReportProgress was stored on the job (Job.Progress); at most one per
	// job per Config.ProgressInterval. Duration is how long the attempt
	// has run.
	EventProgressed EventKind = "progressed"
	// EventCompleted: the job completed.
	EventCompleted EventKind = "completed"
	// EventFailed: the job failed for good.
	EventFailed EventKind = "failed"
	// EventRetried: the attempt failed and the job will be retried.
	EventRetried EventKind = "retried"
	// EventSnoozed: the worker snoozed the job, or Stop handed it back.
	EventSnoozed EventKind = "snoozed"
	// EventCancelled: the worker cancelled the job, or this client's
	// Cancel or CancelMany did.
	EventCancelled EventKind = "cancelled"
	// EventRescued: this client's rescuer took the job back from a client
	// whose lease on it expired (that client is presumed gone), and
	// recorded the lost attempt in its Errors. The job is pending again,
	// or failed when it had no retries left (Job.Status says which; no
	// EventFailed is sent for it). Job is the job as the rescue left it;
	// Duration is how long before the rescue the lost attempt started.
	EventRescued EventKind = "rescued"
	// EventLogged: the worker logged a record through Logger, which the
	// job keeps (Event.Log); sent at once, before the record is written,
	// so that it can be shown live. Duration is how long the attempt has
	// run.
	EventLogged EventKind = "logged"
)

// Event is one thing that happened to a job, as seen by this client.
type Event struct {
	// Kind is what happened.
	Kind EventKind
	// Job is the job as the client knew it at the time: for the outcome
	// of an attempt, the job as it was claimed.
	Job *JobRow
	// At is when it happened, by the client's clock.
	At time.Time
	// Duration is, for an attempt's outcome, how long the attempt ran;
	// for EventProgressed, how long it has run so far; for EventRescued,
	// how long before the rescue the lost attempt started.
	Duration time.Duration
	// Log is, for EventLogged, the record logged.
	Log *LogRecord
}

// DefaultEventBuffer is how many events a subscription holds before it
// drops new ones, when Subscribe is given no size.
const DefaultEventBuffer = 1024

// Subscription receives a client's events (see Client.Subscribe).
type Subscription struct {
	// C delivers the events. It is closed by Close.
	C <-chan Event

	c       chan Event
	kinds   map[EventKind]bool
	dropped atomic.Uint64
	hub     *eventHub
	once    sync.Once
}

// Dropped returns how many events were dropped because C was full.
func (s *Subscription) Dropped() uint64 { return s.dropped.Load() }

// Close ends the subscription and closes C. It is idempotent.
func (s *Subscription) Close() {
	s.once.Do(func() {
		s.hub.mu.Lock()
		defer s.hub.mu.Unlock()
		delete(s.hub.subs, s)
		s.hub.storeWanted()
		close(s.c)
	})
}

// eventHub fans a client's events out to its subscriptions without ever
// blocking: a full subscription drops the event and counts it.
type eventHub struct {
	mu   sync.Mutex
	subs map[*Subscription]bool
	// wanted has the bit (kindBit) of every kind a subscription wants,
	// read without the lock: an event nobody wants costs one atomic
	// load.
	wanted atomic.Uint32
	// held maps the IDs of jobs being enqueued, whose enqueued event is
	// yet to be sent, to their other events that came first, sent after it.
	held map[string][]Event
	// now is the client's clock.
	now func() time.Time
}

// Subscribe returns a subscription to this client's job events of the
// given kinds (every kind when none is given), buffered for
// DefaultEventBuffer events. Events are sent without blocking: a
// subscriber that falls behind never slows the client's workers; the
// events that do not fit are dropped and counted in Dropped. Events are
// in-process only: each client reports what it did itself. Close the
// subscription when done.
func (c *Client[TTx]) Subscribe(kinds ...EventKind) *Subscription {
	return c.SubscribeBuffered(DefaultEventBuffer, kinds...)
}

// SubscribeBuffered is Subscribe with a buffer of size events (at least 1).
func (c *Client[TTx]) SubscribeBuffered(size int, kinds ...EventKind) *Subscription {
	ch := make(chan Event, max(size, 1))
	s := &Subscription{C: ch, c: ch, hub: &c.events}
	if len(kinds) > 0 {
		s.kinds = make(map[EventKind]bool, len(kinds))
		for _, k := range kinds {
			s.kinds[k] = true
		}
	}
	h := &c.events
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = make(map[*Subscription]bool)
	}
	h.subs[s] = true
	h.storeWanted()
	return s
}

// storeWanted sets wanted from the subscriptions; h.mu is held.
func (h *eventHub) storeWanted() {
	var w uint32
	for s := range h.subs {
		if s.kinds == nil {
			w = ^uint32(0)
			break
		}
		for k := range s.kinds {
			w |= kindBit(k)
		}
	}
	h.wanted.Store(w)
}

// kindBit returns the bit of kind in eventHub.wanted.
func kindBit(kind EventKind) uint32 {
	for i, k := range eventKinds {
		if k == kind {
			return 1 << i
		}
	}
	return 0
}

// eventKinds are the kinds of events, in the order of their bits.
var eventKinds = [...]EventKind{EventEnqueued, EventStarted, EventProgressed, EventCompleted, EventFailed,
	EventRetried, EventSnoozed, EventCancelled, EventRescued, EventLogged}

// wants reports whether a subscription wants events of kind.
func (h *eventHub) wants(kind EventKind) bool {
	w := h.wanted.Load()
	return w != 0 && w&kindBit(kind) != 0
}

// emit sends an event to every subscription that wants its kind. It costs
// one atomic load when nobody subscribes, and no lock when nobody wants
// its kind. An event of a job whose enqueued event is still to come waits
// for it (see holdEnqueued).
func (h *eventHub) emit(kind EventKind, job *JobRow, d time.Duration) {
	if !h.wants(kind) {
		return
	}
	h.post(Event{Kind: kind, Job: job, At: h.now(), Duration: d})
}

// emitLog sends an EventLogged of rec, logged by job's worker d into its
// attempt. It costs one atomic load when nobody subscribes.
func (h *eventHub) emitLog(job *JobRow, rec *LogRecord, d time.Duration) {
	if !h.wants(EventLogged) {
		return
	}
	log := *rec // rec is the caller's: a copy only when sent
	h.post(Event{Kind: EventLogged, Job: job, At: rec.Time, Duration: d, Log: &log})
}

// post sends ev, or holds it until its job's enqueued event is sent.
func (h *eventHub) post(ev Event) {
	job := ev.Job
	h.mu.Lock()
	defer h.mu.Unlock()
	if q, ok := h.held[job.ID]; ok {
		h.held[job.ID] = append(q, ev)
		return
	}
	h.send(ev)
}

// send delivers ev to the subscriptions that want it; h.mu is held.
func (h *eventHub) send(ev Event) {
	for s := range h.subs {
		if s.kinds != nil && !s.kinds[ev.Kind] {
			continue
		}
		select {
		case s.c <- ev:
		default:
			s.dropped.Add(1)
		}
	}
}

// holdEnqueued marks jobs about to be enqueued so that their other events
// wait for their enqueued event, which releaseEnqueued sends. It reports
// whether it held anything: nothing is held when nobody wants enqueued
// events.
func (h *eventHub) holdEnqueued(inserts []*driver.JobInsert) bool {
	if !h.wants(EventEnqueued) {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held == nil {
		h.held = make(map[string][]Event)
	}
	for _, ins := range inserts {
		h.held[ins.ID] = nil
	}
	return true
}

// releaseEnqueued ends holdEnqueued: for each insert it sends the enqueued
// event of its result, unless the job was a duplicate (results is nil when
// the enqueue failed), then the job's events that waited for it.
func (h *eventHub) releaseEnqueued(inserts []*driver.JobInsert, results []driver.JobInsertResult, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, ins := range inserts {
		if i < len(results) && !results[i].Duplicate {
			h.send(Event{Kind: EventEnqueued, Job: results[i].Job, At: at})
		}
		for _, ev := range h.held[ins.ID] {
			h.send(ev)
		}
		delete(h.held, ins.ID)
	}
}

// outcomeEvent returns the event of a recorded finalization.
func outcomeEvent(status JobStatus, snooze bool) EventKind {
	switch status {
	case StatusCompleted:
		return EventCompleted
	case StatusFailed:
		return EventFailed
	case StatusCancelled:
		return EventCancelled
	}
	if snooze {
		return EventSnoozed
	}
	return EventRetried
}
