package sluiceweb_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/sluiceweb"
)

// sseEvent is one event of a stream.
type sseEvent struct {
	id, name, data string
}

// changeJSON is an event's data.
type changeJSON struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	Job  *struct {
		ID       string `json:"id"`
		Topic    string `json:"topic"`
		Status   string `json:"status"`
		Progress *struct {
			Percent float64 `json:"percent"`
		} `json:"progress"`
		Logged int `json:"logged"`
	} `json:"job"`
}

func (ev sseEvent) change(t *testing.T) changeJSON {
	t.Helper()
	var ch changeJSON
	require.NoError(t, json.Unmarshal([]byte(ev.data), &ch))
	require.Equal(t, ev.id, ch.ID, "the event's id is the change's")
	return ch
}

// eventStream reads an event stream in a goroutine of its own.
type eventStream struct {
	t        *testing.T
	doc      *openAPIDoc
	events   chan sseEvent
	comments atomic.Int64
	header   http.Header
	cancel   context.CancelFunc
	done     sync.WaitGroup
}

// events opens an event stream at path, resuming after lastID if not
// empty, with the header's name-value pairs, and requires it to open. It
// is closed when the test ends.
func (e *env) events(path, lastID string, header ...string) *eventStream {
	e.t.Helper()
	ctx, cancel := context.WithCancel(e.t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+"/sluice/"+path, nil)
	require.NoError(e.t, err)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := e.srv.Client().Do(req)
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, res.StatusCode)
	require.Equal(e.t, "text/event-stream", res.Header.Get("Content-Type"))
	e.doc.check(e.t, http.MethodGet, "/api/events", &response{status: res.StatusCode, header: res.Header})
	s := &eventStream{t: e.t, doc: e.doc, events: make(chan sseEvent, 1000), header: res.Header, cancel: cancel}
	s.done.Go(func() {
		defer close(s.events)
		defer res.Body.Close()
		s.read(bufio.NewReader(res.Body))
	})
	e.t.Cleanup(s.close)
	return s
}

// read parses events until the stream ends.
func (s *eventStream) read(r *bufio.Reader) {
	for {
		ev, err := readEvent(r, &s.comments)
		if err != nil {
			return
		}
		s.events <- ev
	}
}

// readEvent reads the next event of a stream, counting the comments
// before it.
func readEvent(r *bufio.Reader, comments *atomic.Int64) (sseEvent, error) {
	var ev sseEvent
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return ev, err
		}
		line = strings.TrimSuffix(line, "\n")
		field, value, _ := strings.Cut(line, ": ")
		switch {
		case line == "":
			if ev.name != "" {
				return ev, nil
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, ":"):
			comments.Add(1)
		case field == "id":
			ev.id = value
		case field == "event":
			ev.name = value
		case field == "data":
			ev.data = value
		}
	}
}

// close ends the stream and waits for its reader.
func (s *eventStream) close() {
	s.cancel()
	s.done.Wait()
}

// next returns the next event, within 15 s, its data checked against the
// OpenAPI document.
func (s *eventStream) next() sseEvent {
	s.t.Helper()
	select {
	case ev, ok := <-s.events:
		require.True(s.t, ok, "the stream ended")
		s.doc.checkEvent(s.t, ev.name, ev.data)
		return ev
	case <-time.After(15 * time.Second):
		require.FailNow(s.t, "no event within 15 s")
	}
	return sseEvent{}
}

// ended requires the stream to end within 5 s.
func (s *eventStream) ended() {
	s.t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-s.events:
			if !ok {
				return
			}
		case <-timeout:
			require.FailNow(s.t, "the stream did not end")
		}
	}
}

// nextJob returns the next job event of job id, skipping others.
func (s *eventStream) nextJob(id string) (sseEvent, changeJSON) {
	s.t.Helper()
	for {
		ev := s.next()
		if ev.name == "job" {
			if ch := ev.change(s.t); ch.Job.ID == id {
				return ev, ch
			}
		}
	}
}

func TestEventsResumeWithLastEventID(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		keep := e.events("api/events", "") // keeps the feed between the others
		first := e.events("api/events", "")
		id1 := e.enqueue(nil)
		seen, ch := first.nextJob(id1)
		require.Equal(t, "enqueued", ch.Kind)
		require.NotEmpty(t, seen.id)
		first.close()

		missed := []string{e.enqueue(nil), e.enqueue(nil)}
		for _, id := range append([]string{id1}, missed...) {
			keep.nextJob(id)
		}
		resumed := e.events("api/events", seen.id)
		for _, id := range missed {
			ev := resumed.next()
			require.Equal(t, "job", ev.name)
			require.Equal(t, id, ev.change(t).Job.ID, "the missed changes, in order")
		}

		for _, path := range []string{"api/events?last_event_id=nope-1", "api/events"} {
			last := ""
			if path == "api/events" {
				last = "0-0" // another run of the feed
			}
			reset := e.events(path, last)
			ev := reset.next()
			require.Equal(t, "reset", ev.name, path)
			require.Equal(t, "reset", ev.change(t).Kind)
		}
	})
}

func TestEventsFilterAndRefuseBadParameters(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		watched := e.enqueue(nil)
		byID := e.events("api/events?ids="+watched, "")
		byTopic := e.events("api/events?topics=nope,mail", "")
		other := e.enqueue(nil)
		_, err := e.client.Cancel(t.Context(), watched)
		require.NoError(t, err)

		_, ch := byTopic.nextJob(other)
		require.Equal(t, "enqueued", ch.Kind)
		ev := byID.next()
		require.Equal(t, watched, ev.change(t).Job.ID, "only the job asked for")
		require.Equal(t, "cancelled", ev.change(t).Kind)

		e.do("GET", "api/events?ids=nope", "").problem(t, http.StatusBadRequest, sluiceweb.CodeInvalidFilter)
		e.do("GET", "api/events?since=1", "").problem(t, http.StatusBadRequest, sluiceweb.CodeInvalidFilter)
	})
}

func TestEventsEndWhenTheHandlerCloses(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, &sluiceweb.Options{Authorize: sluiceweb.AllowAll, Heartbeat: 20 * time.Millisecond})
		stream := e.events("api/events", "")
		require.Equal(t, "no-store", stream.header.Get("Cache-Control"))
		require.Eventually(t, func() bool { return stream.comments.Load() >= 3 }, 5*time.Second, 10*time.Millisecond,
			"heartbeats")
		e.h.Close()
		stream.ended()
		e.do("GET", "api/events", "").problem(t, http.StatusServiceUnavailable, sluiceweb.CodeUnavailable)
		// The rest of the API keeps working.
		require.Equal(t, http.StatusOK, e.do("GET", "api/jobs", "").status)
	})
}

func TestEventsShowTheHandlersOwnActionsAtOnce(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		stream := e.events("api/events?topics=mail", "")
		var res struct {
			Job jobJSON `json:"job"`
		}
		e.do("POST", "api/jobs", `{"topic": "mail", "payload": {"to": "x@example.com"}, "delay": "1h"}`).json(t, http.StatusCreated, &res)
		id := res.Job.ID
		for _, step := range []struct{ method, path, kind string }{
			{"POST", "api/jobs/" + id + "/cancel", "cancelled"},
			{"POST", "api/jobs/" + id + "/requeue", "requeued"},
			{"POST", "api/jobs/" + id + "/cancel", "cancelled"},
			{"DELETE", "api/jobs/" + id, "deleted"},
		} {
			require.Equal(t, http.StatusOK, e.do(step.method, step.path, "").status)
			_, ch := stream.nextJob(id)
			if ch.Kind == "enqueued" {
				_, ch = stream.nextJob(id)
			}
			require.Equal(t, step.kind, ch.Kind, step.path)
		}
	})
}
