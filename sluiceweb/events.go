package sluiceweb

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/sluicehq/sluice"
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
	// Last-Event-ID given: refetch what you show.
	EventReset = "reset"
)

// streamRetry is the reconnection delay an event stream asks browsers for.
const streamRetry = 2 * time.Second

// events serves GET api/events: the client's change feed as Server-Sent
// Events, one event per change, with the change's ID as the event's ID, so
// that a browser that reconnects resumes with Last-Event-ID.
func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
	q, err := newQuery(r, "ids", "topics", "last_event_id")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	opts := &sluice.WatchOptions{IDs: q.list("ids"), Topics: q.list("topics"), After: r.Header.Get("Last-Event-ID")}
	for i, id := range opts.IDs {
		if !isUUID(id) {
			h.fail(w, r, badRequest(CodeInvalidFilter, fmt.Sprintf("ids[%d]", i), fmt.Sprintf("%q is not a job ID (a UUID)", id)))
			return
		}
	}
	if opts.After == "" {
		if opts.After, err = q.one("last_event_id"); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	if !h.authorize(w, r, scoped(ActionRead, "events", opts.Topics)) {
		return
	}
	select {
	case <-h.closing:
		writeProblem(w, &problem{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Detail: "the server is shutting down"})
		return
	default:
	}
	sub, err := h.c.Watch(r.Context(), opts)
	if err != nil {
		if r.Context().Err() == nil {
			h.opts.Logger.Error("sluiceweb: the change feed failed", "error", err)
			writeProblem(w, &problem{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
				Detail: "the change feed cannot read the jobs; try again later"})
		}
		return
	}
	defer sub.Close()
	logs := h.c.Subscribe(sluice.EventLogged)
	defer logs.Close()
	h.stream(w, r, sub, logs, newLogFilter(opts))
}

// stream writes sub's changes, and the records of logs that filter
// selects, to w until the request ends, the subscription closes or the
// handler is closed.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, sub *sluice.ChangeSubscription, logs *sluice.Subscription,
	filter *logFilter) {
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives the server's WriteTimeout
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprintf(w, "retry: %d\n: sluice change feed\n\n", streamRetry.Milliseconds()); err != nil {
		return
	}
	if rc.Flush() != nil {
		return
	}
	heartbeat := time.NewTicker(h.opts.Heartbeat)
	defer heartbeat.Stop()
	for {
		var err error
		select {
		case ch, ok := <-sub.C:
			if !ok {
				return
			}
			err = writeEvent(w, ch)
		case ev := <-logs.C:
			if ev.Log == nil || !filter.wants(ev.Job) {
				continue
			}
			err = writeLog(w, &ev)
		case <-heartbeat.C:
			_, err = fmt.Fprint(w, ": heartbeat\n\n")
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

// writeEvent writes one change as an event.
func writeEvent(w http.ResponseWriter, ch sluice.Change) error {
	name := EventJob
	switch ch.Kind {
	case sluice.ChangeResync:
		name = EventResync
	case sluice.ChangeReset:
		name = EventReset
	}
	data, err := json.Marshal(ch)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "id: %s\nevent: %s\ndata: %s\n\n", ch.ID, name, data)
	return err
}
