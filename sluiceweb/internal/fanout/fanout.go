// Package fanout delivers events, each encoded once, to many streams.
// An event may be encoded when a stream first writes it ([Event.Encode]),
// so that one no stream selects costs no encoding.
//
// A [Hub] holds the streams. [Hub.Publish] appends each event once to a
// log that every stream without a filter reads from where it left off,
// however many there are, and to the buffer of each stream with a filter
// that selects it: those are found through an index, so an event costs a
// map lookup, however many streams watch other jobs. Each stream's writer takes everything waiting
// at once ([Stream.WriteTo]) and writes it in a few large writes.
//
// A stream's buffer is bounded. When a stream has more events waiting
// than the bound (its reader is slower than the events come), they are
// dropped and the stream is marked reset: its writer writes a reset event
// before the events that come after, so that the reader refetches what it
// shows. Publish never waits for a writer, so a slow reader slows nobody
// but itself. A stream may also have a rate: what it sends over time, on
// average, when more comes, is a reset instead, so that what the streams
// cost the process stays bounded however fast events come.
//
// The hub keeps the latest events that have an ID, so that a stream that
// joins after an event it has seen ([Hub.Join]) starts with those it
// missed, or with a reset if they are no longer kept.
package fanout

import (
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// chunk is the size of the writes WriteTo makes, unless one event is
// larger.
const chunk = 64 << 10

// Event is one event, encoded.
type Event struct {
	// ID is the event's place in the sequence of events; empty for one
	// outside it, which is sent live and never replayed.
	ID string
	// Job and Topic are what streams' filters select it by. An event
	// without a Job goes to every stream.
	Job, Topic string
	// Frame is the event as written. Streams share it: it must not be
	// changed once published.
	Frame []byte
	// Encode, if not nil and Frame is nil, returns Frame: it is called
	// once, by the first stream that writes the event, so that an event
	// no stream selects is never encoded. It may be called from any
	// goroutine.
	Encode func() []byte

	// once guards the call of Encode.
	once sync.Once

	// at is the ID of the sequence's latest event when it was published:
	// its own, or the one before it.
	at string
}

// frame returns the event as written, encoding it on first use.
func (ev *Event) frame() []byte {
	if ev.Encode != nil {
		ev.once.Do(func() {
			if ev.Frame == nil {
				ev.Frame = ev.Encode()
			}
		})
	}
	return ev.Frame
}

// Filter selects a stream's events: those of jobs in IDs, if any, and of
// topics in Topics, if any. The zero Filter selects every event.
type Filter struct {
	IDs, Topics []string
}

// Config configures a Hub.
type Config struct {
	// Buffer is how many events a stream holds for its writer, at least 1.
	Buffer int
	// History is how many of the latest events with an ID the hub keeps
	// for streams that join after one of them, at least 1.
	History int
	// Reset returns the frame of a reset event whose ID is id: the
	// sequence's latest event when the stream missed events.
	Reset func(id string) []byte
	// Rate, if positive, is how many events a second a stream writes at
	// most, on average, in bursts of up to a second's worth (or Buffer,
	// if fewer): a write that would exceed it writes a reset instead of
	// its events.
	Rate float64
	// Now is the clock of Rate; default time.Now.
	Now func() time.Time
}

// Hub fans events out to streams. Its methods are safe for concurrent use.
type Hub struct {
	cfg Config
	// resets counts the reset events the streams' writers wrote.
	resets atomic.Uint64

	mu sync.Mutex
	// log holds the latest Buffer events for the streams without a
	// filter: the n-th event published since the hub began is at
	// log[n % Buffer], and seq events have been. wake, if not nil, is
	// closed by the next Publish, for the writers waiting.
	log  []*Event
	seq  uint64
	wake chan struct{}
	// all are the streams without a filter; filtered those with one,
	// indexed by job in byID (whose streams may also filter by topic)
	// and by topic in byTopic (those that filter by topic only).
	all, filtered []*Stream
	byID, byTopic map[string][]*Stream
	// ring holds the latest events with an ID, the oldest at head.
	ring []*Event
	head int
	n    int
	// last is the ID of the sequence's latest event.
	last string
}

// New returns a hub without streams or history.
func New(cfg Config) *Hub {
	cfg.Buffer, cfg.History = max(cfg.Buffer, 1), max(cfg.History, 1)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Hub{cfg: cfg, byID: make(map[string][]*Stream), byTopic: make(map[string][]*Stream),
		ring: make([]*Event, cfg.History), log: make([]*Event, cfg.Buffer)}
}

// burst is the most events a stream may write at once under its rate: a
// second's worth, at least one, at most Buffer.
func (h *Hub) burst() float64 {
	return min(float64(h.cfg.Buffer), max(h.cfg.Rate, 1))
}

// Resets returns how many reset events the streams' writers have written.
func (h *Hub) Resets() uint64 { return h.resets.Load() }

// Last returns the ID of the latest event published with an ID, or the
// one Restart was given since.
func (h *Hub) Last() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

// Publish delivers events, in order, to the streams that select them,
// without waiting for any, and keeps those with an ID.
func (h *Hub) Publish(events []*Event) {
	if len(events) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range events {
		if ev.ID != "" {
			h.last = ev.ID
			h.keep(ev)
		}
		ev.at = h.last
	}
	if len(h.all) > 0 {
		for _, ev := range events {
			h.log[h.seq%uint64(len(h.log))] = ev
			h.seq++
		}
		h.wakeAll()
	}
	if len(h.filtered) == 0 {
		return
	}
	for _, ev := range events {
		if ev.Job == "" {
			for _, s := range h.filtered {
				s.push(ev)
			}
			continue
		}
		for _, s := range h.byID[ev.Job] {
			if s.topics == nil || s.topics[ev.Topic] {
				s.push(ev)
			}
		}
		for _, s := range h.byTopic[ev.Topic] {
			s.push(ev)
		}
	}
}

// wakeAll wakes the writers of streams without a filter that wait; h.mu
// is held.
func (h *Hub) wakeAll() {
	if h.wake != nil {
		close(h.wake)
		h.wake = nil
	}
}

// keep adds ev to the ring; h.mu is held.
func (h *Hub) keep(ev *Event) {
	if h.n < len(h.ring) {
		h.ring[(h.head+h.n)%len(h.ring)] = ev
		h.n++
		return
	}
	h.ring[h.head] = ev
	h.head = (h.head + 1) % len(h.ring)
}

// Restart says that the next events do not follow those published so
// far: it forgets them, takes last as the sequence's latest ID, and marks
// every stream reset.
func (h *Hub) Restart(last string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	clear(h.ring)
	h.head, h.n, h.last = 0, 0, last
	for _, s := range h.all {
		s.cursor = h.seq
		s.markReset(last)
	}
	h.wakeAll()
	for _, s := range h.filtered {
		s.markReset(last)
	}
}

// End ends every stream (see Stream.Done) and removes it.
func (h *Hub) End() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range append(h.all, h.filtered...) {
		close(s.done)
		s.hub = nil
	}
	h.all, h.filtered = nil, nil
	clear(h.byID)
	clear(h.byTopic)
}

// Join adds a stream that receives the events f selects. With after not
// empty, the ID of the last event its reader saw, the stream starts with
// the kept events since that f selects, or with a reset if the hub no
// longer keeps them all (or never had after). Leave it when done.
func (h *Hub) Join(f Filter, after string) *Stream {
	s := &Stream{owner: h, ids: set(f.IDs), topics: set(f.Topics), limit: h.cfg.Buffer, encodeReset: h.cfg.Reset, resets: &h.resets,
		rate: h.cfg.Rate, burst: h.burst(), now: h.cfg.Now, tokens: h.burst(), filled: h.cfg.Now(),
		ready: make(chan struct{}, 1), done: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	s.hub = h
	switch {
	case s.ids != nil:
		for id := range s.ids {
			h.byID[id] = append(h.byID[id], s)
		}
	case s.topics != nil:
		for t := range s.topics {
			h.byTopic[t] = append(h.byTopic[t], s)
		}
	}
	if s.ids == nil && s.topics == nil {
		s.shared, s.cursor = true, h.seq
		h.all = append(h.all, s)
	} else {
		h.filtered = append(h.filtered, s)
	}
	if after == "" || after == h.last {
		return s
	}
	for i := h.n - 1; i >= 0; i-- {
		if h.at(i).ID != after {
			continue
		}
		for j := i + 1; j < h.n; j++ {
			if ev := h.at(j); s.wants(ev) {
				s.push(ev)
			}
		}
		return s
	}
	s.markReset(h.last)
	return s
}

// at returns the ring's i-th event, oldest first; h.mu is held.
func (h *Hub) at(i int) *Event { return h.ring[(h.head+i)%len(h.ring)] }

// Leave removes s, which receives nothing more. It is idempotent.
func (h *Hub) Leave(s *Stream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.hub != h {
		return
	}
	s.hub = nil
	if s.shared {
		if h.all = remove(h.all, s); len(h.all) == 0 {
			clear(h.log) // let the events go
		}
		return
	}
	h.filtered = remove(h.filtered, s)
	for id := range s.ids {
		if h.byID[id] = remove(h.byID[id], s); len(h.byID[id]) == 0 {
			delete(h.byID, id)
		}
	}
	if s.ids != nil {
		return
	}
	for t := range s.topics {
		if h.byTopic[t] = remove(h.byTopic[t], s); len(h.byTopic[t]) == 0 {
			delete(h.byTopic, t)
		}
	}
}

// remove returns ss without s, in another order.
func remove(ss []*Stream, s *Stream) []*Stream {
	for i, x := range ss {
		if x == s {
			last := len(ss) - 1
			ss[i] = ss[last]
			ss[last] = nil
			return ss[:last]
		}
	}
	return ss
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

// Stream is one reader's events, waiting for its writer.
type Stream struct {
	owner       *Hub
	ids, topics map[string]bool
	// shared says the stream has no filter: it reads the hub's log from
	// cursor on (the hub's mu guards cursor), and its buffer holds only
	// the events it replays as it joins.
	shared      bool
	cursor      uint64
	limit       int
	encodeReset func(id string) []byte
	resets      *atomic.Uint64
	rate, burst float64
	now         func() time.Time
	ready       chan struct{}
	done        chan struct{}
	// hub is the hub while the stream is in it; the hub's mu guards it.
	hub *Hub
	// tokens are the events the stream may write under its rate, as of
	// filled; only the writer touches them.
	tokens float64
	filled time.Time

	mu sync.Mutex
	// pending are the events waiting; spare is the array the writer gave
	// back, reused by the next take.
	pending, spare []*Event
	// reset says that events were dropped; resetAt is the ID its reset
	// event carries.
	reset   bool
	resetAt string
}

// closed is a channel closed from the start.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Ready returns a channel that receives a value, or is closed, when events
// are waiting for the writer. Call it again after each WriteTo.
func (s *Stream) Ready() <-chan struct{} {
	if !s.shared {
		return s.ready
	}
	h := s.owner
	h.mu.Lock()
	defer h.mu.Unlock()
	s.mu.Lock()
	waiting := len(s.pending) > 0 || s.reset
	s.mu.Unlock()
	if waiting || s.cursor != h.seq {
		return closed
	}
	if h.wake == nil {
		h.wake = make(chan struct{})
	}
	return h.wake
}

// Done is closed when the hub ends the stream (Hub.End).
func (s *Stream) Done() <-chan struct{} { return s.done }

// wants reports whether s selects ev.
func (s *Stream) wants(ev *Event) bool {
	return ev.Job == "" || (s.ids == nil || s.ids[ev.Job]) && (s.topics == nil || s.topics[ev.Topic])
}

// push adds events to those waiting. When the buffer is full it drops
// them all, and the event that did not fit, and marks the stream reset
// at that event.
func (s *Stream) push(events ...*Event) {
	s.mu.Lock()
	for _, ev := range events {
		if len(s.pending) < s.limit {
			s.pending = append(s.pending, ev)
			continue
		}
		clear(s.pending)
		s.pending = s.pending[:0]
		s.reset, s.resetAt = true, ev.at
	}
	s.mu.Unlock()
	s.signal()
}

// markReset drops the events waiting and marks the stream reset at id.
func (s *Stream) markReset(id string) {
	s.mu.Lock()
	clear(s.pending)
	s.pending = s.pending[:0]
	s.reset, s.resetAt = true, id
	s.mu.Unlock()
	s.signal()
}

func (s *Stream) signal() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// allow reports whether the stream's rate lets it write n events now,
// and if so counts them.
func (s *Stream) allow(n int) bool {
	if s.rate <= 0 {
		return true
	}
	now := s.now()
	s.tokens = min(s.burst, s.tokens+s.rate*now.Sub(s.filled).Seconds())
	s.filled = now
	if float64(n) > s.tokens {
		return false
	}
	s.tokens -= float64(n)
	return true
}

// take returns the events waiting, and whether (and where) the stream
// was reset before them; the buffer it returns goes back to s.spare.
func (s *Stream) take() (events []*Event, reset bool, at string) {
	if s.shared {
		s.owner.mu.Lock()
		defer s.owner.mu.Unlock()
	}
	s.mu.Lock()
	events = s.pending
	s.pending, s.spare = s.spare[:0], nil
	reset, at = s.reset, s.resetAt
	s.reset = false
	s.mu.Unlock()
	if !s.shared {
		return events, reset, at
	}
	h := s.owner
	size := uint64(len(h.log))
	if h.seq-s.cursor > size {
		// More came than the log holds: what the stream missed is lost.
		clear(events)
		events = events[:0]
		reset, at = true, h.log[(h.seq-1)%size].at
	} else if n := h.seq - s.cursor; n > 0 {
		from := s.cursor % size
		if to := from + n; to <= size {
			events = append(events, h.log[from:to]...)
		} else {
			events = append(append(events, h.log[from:]...), h.log[:to-size]...)
		}
	}
	s.cursor = h.seq
	return events, reset, at
}

// bufs are WriteTo's buffers.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, chunk); return &b }}

// WriteTo writes the events waiting to w, a reset event first if events
// were dropped, in writes of up to 64 KiB (or one event, if larger); or,
// when writing them would exceed the stream's rate, a reset event alone.
// It returns the bytes written and the first error. Only one goroutine,
// the stream's writer, may call it.
func (s *Stream) WriteTo(w io.Writer) (int64, error) {
	events, reset, at := s.take()
	defer func() {
		clear(events)
		s.mu.Lock()
		s.spare = events[:0]
		s.mu.Unlock()
	}()
	if n := len(events); n > 0 && !s.allow(n) {
		reset, at = true, events[n-1].at
		clear(events)
		events = events[:0]
	}

	bp := bufs.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 2*chunk {
			*bp = (*bp)[:0]
			bufs.Put(bp)
		}
	}()
	buf := *bp
	var written int64
	flush := func() error {
		n, err := w.Write(buf)
		written += int64(n)
		buf = buf[:0]
		return err
	}
	if reset {
		s.resets.Add(1)
		buf = append(buf, s.encodeReset(at)...)
	}
	for _, ev := range events {
		frame := ev.frame()
		if len(buf) > 0 && len(buf)+len(frame) > chunk {
			if err := flush(); err != nil {
				return written, err
			}
		}
		buf = append(buf, frame...)
	}
	var err error
	if len(buf) > 0 {
		err = flush()
	}
	*bp = buf
	return written, err
}
