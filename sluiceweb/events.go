package sluiceweb

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/sluiceweb/internal/fanout"
)

// The names of the events of GET api/events. Every event's data is a JSON
// object: for EventJob, EventResync and EventReset the change's id, kind,
// job (for EventJob) and at; for EventLog the record.
const (
	// EventJob is a job's change: its kind says what happened
	// (enqueued, started, progressed, logged, retried, requeued,
	// completed, failed, cancelled, deleted) and its job is the job's
	// state.
	EventJob = "job"
	// EventLog is a record a worker of the serving client logged (see
	// sluice.Logger), sent as it is logged: its data is job_id, attempt
	// and record (level, time, message, attrs). It has no event id.
	// Records of jobs other processes run are not sent: a job change of
	// kind logged (or a job.logged that grew) says that they were stored.
	EventLog = "log"
	// EventResync says that some changes were not sent: refetch what you
	// show.
	EventResync = "resync"
	// EventReset says that the stream could not resume after the
	// Last-Event-ID given, or that its reader fell behind and the events
	// waiting for it were dropped (see Options.StreamBuffer): refetch
	// what you show.
	EventReset = "reset"
)

// streamRetry is the reconnection delay an event stream asks browsers for.
const streamRetry = 2 * time.Second

// streamInterval is the least time between two writes of an event stream:
// the first event after a pause is written at once, and those that come
// within the interval after a write wait for the next, together.
const streamInterval = 100 * time.Millisecond

// events serves GET api/events: the client's change feed as Server-Sent
// Events, one event per change, with the change's ID as the event's ID, so
// that a browser that reconnects resumes with Last-Event-ID. Every stream
// of the handler is served from one subscription (see streams).
func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
	q, err := newQuery(r, "ids", "topics", "last_event_id")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	filter := fanout.Filter{IDs: q.list("ids"), Topics: q.list("topics")}
	after := r.Header.Get("Last-Event-ID")
	for i, id := range filter.IDs {
		if !isUUID(id) {
			h.fail(w, r, badRequest(CodeInvalidFilter, fmt.Sprintf("ids[%d]", i), fmt.Sprintf("%q is not a job ID (a UUID)", id)))
			return
		}
	}
	if after == "" {
		if after, err = q.one("last_event_id"); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	if !h.authorize(w, r, scoped(ActionRead, "events", filter.Topics)) {
		return
	}
	select {
	case <-h.closing:
		writeProblem(w, &problem{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Detail: "the server is shutting down"})
		return
	default:
	}
	s, err := h.streams.join(r.Context(), filter, after)
	if err != nil {
		if r.Context().Err() == nil {
			h.opts.Logger.Error("sluiceweb: the change feed failed", "error", err)
			writeProblem(w, &problem{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
				Detail: "the change feed cannot read the jobs; try again later"})
		}
		return
	}
	defer h.streams.leave(s)
	h.stream(w, r, s)
}

// stream writes s's events to w until the request ends, the stream ends
// or the handler is closed: whatever is waiting at once, in a few writes
// and one flush, at most once per streamInterval.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, s *fanout.Stream) {
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives the server's WriteTimeout
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	// HTTP/1.1: no chunks, the stream ends with its connection, as the
	// SSE specification suggests. net/http then writes a batch of events
	// with one system call, where a chunk takes three: its head with the
	// start of its data (in the connection's buffer), the rest, and its
	// tail at the flush. HTTP/2 has no Transfer-Encoding.
	if r.ProtoMajor == 1 {
		hdr.Set("Transfer-Encoding", "identity")
	}
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprintf(w, "retry: %d\n: sluice change feed\n\n", streamRetry.Milliseconds()); err != nil {
		return
	}
	if rc.Flush() != nil {
		return
	}
	heartbeat := time.NewTicker(h.opts.Heartbeat)
	defer heartbeat.Stop()
	// While a write waits out the interval, ready is nil and hold fires
	// when it may go: events that come meanwhile wake nothing.
	pause := time.NewTimer(streamInterval)
	pause.Stop()
	defer pause.Stop()
	ready, hold := s.Ready(), (<-chan time.Time)(nil)
	var last time.Time
	for {
		var err error
		select {
		case <-ready:
			if wait := streamInterval - time.Since(last); wait > 0 {
				pause.Reset(wait)
				ready, hold = nil, pause.C
				continue
			}
			last = time.Now()
			_, err = s.WriteTo(w)
			ready = s.Ready() // asked after the write: what it took no longer counts
		case <-hold:
			hold, last = nil, time.Now()
			_, err = s.WriteTo(w)
			ready = s.Ready()
		case <-heartbeat.C:
			_, err = io.WriteString(w, ": heartbeat\n\n")
		case <-s.Done():
			return
		case <-r.Context().Done():
			return
		case <-h.closing:
			return
		}
		if err != nil || rc.Flush() != nil {
			return
		}
	}
}
