package sluiceweb_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluiceweb"
)

// rawStream is an event stream read from a connection of its own, by
// whoever calls next: no goroutine of its own, so that a test can hold
// a thousand.
type rawStream struct {
	t        *testing.T
	e        *env
	conn     net.Conn
	r        *bufio.Reader
	comments atomic.Int64
}

// rawEvents opens an event stream at path on a connection of its own,
// whose receive buffer is readBuffer bytes if not 0, and requires it to
// open. It is closed when the test ends.
func (e *env) rawEvents(path string, readBuffer int) *rawStream {
	e.t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = conn.Close() })
	if readBuffer > 0 {
		require.NoError(e.t, conn.(*net.TCPConn).SetReadBuffer(readBuffer))
	}
	req, err := http.NewRequest(http.MethodGet, e.srv.URL+"/sluice/"+path, nil)
	require.NoError(e.t, err)
	require.NoError(e.t, req.Write(conn))
	res, err := http.ReadResponse(bufio.NewReader(conn), req)
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, res.StatusCode)
	require.Equal(e.t, "text/event-stream", res.Header.Get("Content-Type"))
	return &rawStream{t: e.t, e: e, conn: conn, r: bufio.NewReader(res.Body)}
}

// next returns the next event, its data checked against the OpenAPI
// document; it fails the test if none comes within a minute.
func (s *rawStream) next() sseEvent {
	s.t.Helper()
	require.NoError(s.t, s.conn.SetReadDeadline(time.Now().Add(time.Minute)))
	ev, err := readEvent(s.r, &s.comments)
	require.NoError(s.t, err, "the stream ended, or no event came within a minute")
	s.e.doc.checkEvent(s.t, ev.name, ev.data)
	return ev
}

// collector reads a stream in a goroutine, as fast as events come, and
// keeps them all.
type collector struct {
	mu     sync.Mutex
	events []sseEvent
	err    error
	more   chan struct{}
	done   chan struct{}
}

func (s *rawStream) collect() *collector {
	c := &collector{more: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for {
			ev, err := readEvent(s.r, &s.comments)
			c.mu.Lock()
			if err != nil {
				c.err = err
			} else {
				c.events = append(c.events, ev)
			}
			c.mu.Unlock()
			select {
			case c.more <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	s.t.Cleanup(func() {
		_ = s.conn.Close()
		<-c.done
	})
	return c
}

// await waits until the events collected satisfy done, and returns them;
// it fails the test if a minute passes without an event.
func (c *collector) await(t *testing.T, done func([]sseEvent) bool) []sseEvent {
	t.Helper()
	for {
		c.mu.Lock()
		evs, err := c.events, c.err
		c.mu.Unlock()
		if done(evs) {
			return evs
		}
		require.NoError(t, err, "the stream ended")
		select {
		case <-c.more:
		case <-time.After(time.Minute):
			require.FailNow(t, "no event within a minute")
		}
	}
}

// jobsIn returns how many job events evs has of the jobs in ids.
func jobsIn(t *testing.T, evs []sseEvent, ids map[string]bool) int {
	n := 0
	for _, ev := range evs {
		if ev.name == "job" && ids[ev.change(t).Job.ID] {
			n++
		}
	}
	return n
}

// seq returns the number of a change in the feed's sequence.
func seq(t *testing.T, id string) int {
	t.Helper()
	_, n, ok := strings.Cut(id, "-")
	require.True(t, ok, id)
	v, err := strconv.Atoi(n)
	require.NoError(t, err, id)
	return v
}

// requireConsecutive requires evs to be job events numbered one after
// another: none lost, none twice, none out of order.
func requireConsecutive(t *testing.T, evs []sseEvent) {
	t.Helper()
	for i, ev := range evs {
		require.Equal(t, "job", ev.name, "event %d: %s", i, ev.data)
		if i > 0 {
			require.Equal(t, seq(t, evs[i-1].id)+1, seq(t, ev.id), "event %d follows event %d", i, i-1)
		}
	}
}

// enqueueBatch enqueues n mail jobs due in an hour through the handler's
// client, in one statement, and returns their IDs.
func (e *env) enqueueBatch(n int) map[string]bool {
	e.t.Helper()
	params := make([]sluice.EnqueueParams, n)
	for i := range params {
		params[i] = sluice.EnqueueParams{Args: mailArgs{To: fmt.Sprint(i, "@example.com")},
			Options: &sluice.EnqueueOptions{RunAt: time.Now().Add(time.Hour)}}
	}
	res, err := e.client.EnqueueMany(e.t.Context(), params)
	require.NoError(e.t, err)
	ids := make(map[string]bool, n)
	for _, r := range res {
		ids[r.Job.ID] = true
	}
	return ids
}

// smallWrites gives the connections it accepts a small send buffer, so
// that a reader that does not read holds up its stream's writes at once.
type smallWrites struct{ net.Listener }

func (l smallWrites) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		err = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// newSmallWritesEnv is newEnv with opts on a server whose connections
// have small send buffers.
func newSmallWritesEnv(t *testing.T, db *database, opts *sluiceweb.Options) *env {
	t.Helper()
	opts.Logger = quiet
	h, c, err := db.serve(t, handlerConfig(), opts)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/sluice/", http.StripPrefix("/sluice", h))
	srv := httptest.NewUnstartedServer(mux)
	srv.Listener = smallWrites{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(h.Close)
	return &env{t: t, db: db, srv: srv, h: h, client: c, doc: loadDoc(t, srv.URL)}
}

func TestEventsResetAReaderThatFallsBehindWhileTheOthersKeepUp(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		// No rate: the fast reader may take its events faster than the
		// default allows a stream of 16.
		e := newSmallWritesEnv(t, db, &sluiceweb.Options{Authorize: sluiceweb.AllowAll, StreamBuffer: 16, StreamRate: -1})
		watched := e.enqueue(nil)
		oneJob := e.rawEvents("api/events?ids="+watched, 0)
		slow := e.rawEvents("api/events", 2048) // not read until the end
		fast := e.rawEvents("api/events", 0).collect()

		// 60 enqueues of 10 jobs, each of which the fast reader takes
		// before the next: 600 changes, while the slow reader reads none
		// and its stream holds 16 (its connection's buffers some 100
		// more, on Linux).
		all := map[string]bool{}
		for range 60 {
			for id := range e.enqueueBatch(10) {
				all[id] = true
			}
			fast.await(t, func(evs []sseEvent) bool { return len(evs) >= len(all) })
		}
		got := fast.await(t, func(evs []sseEvent) bool { return len(evs) >= len(all) })
		require.Len(t, got, len(all))
		require.Equal(t, len(all), jobsIn(t, got, all), "every job's enqueue, once")
		requireConsecutive(t, got)

		// The slow reader gets what was in flight, then a reset, then
		// what came after it.
		var before []sseEvent
		reset := slow.next()
		for reset.name != "reset" {
			before = append(before, reset)
			reset = slow.next()
		}
		require.Less(t, len(before), len(all), "the slow reader fell behind")
		for i, ev := range before {
			require.Equal(t, got[i].id, ev.id, "what came before the reset came in order")
		}
		require.Equal(t, reset.id, reset.change(t).ID)
		require.GreaterOrEqual(t, seq(t, reset.id), seq(t, got[len(before)].id), "the reset is at or after what it dropped")
		require.LessOrEqual(t, seq(t, reset.id), seq(t, got[len(got)-1].id))

		// The slow reader may still be behind after its first reset (its
		// writer took the reset alone, then got stuck again): each time,
		// another reset, further on, until it has the last change, as an
		// event or within a reset.
		last := e.enqueue(nil)
		lastEv := fast.await(t, func(evs []sseEvent) bool { return len(evs) > len(got) })[len(got)]
		require.Equal(t, last, lastEv.change(t).Job.ID)
		for seq(t, reset.id) < seq(t, lastEv.id) {
			ev := slow.next()
			if ev.name == "reset" {
				require.Greater(t, seq(t, ev.id), seq(t, reset.id), "a later reset is further on")
				require.LessOrEqual(t, seq(t, ev.id), seq(t, lastEv.id))
				reset = ev
				continue
			}
			require.Equal(t, "job", ev.name)
			require.Greater(t, seq(t, ev.id), seq(t, reset.id), "after the reset, only what came after it")
			if ev.change(t).Job.ID == last {
				require.Equal(t, lastEv.id, ev.id)
				break
			}
		}

		// The stream of one job got nothing of the others.
		_, err := e.client.Cancel(t.Context(), watched)
		require.NoError(t, err)
		ev := oneJob.next()
		require.Equal(t, watched, ev.change(t).Job.ID)
		require.Equal(t, "cancelled", ev.change(t).Kind)
	})
}

func TestEventsAThousandStreamsOfOneJobEachSeeTheirJob(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		// No rate: the stream of everything is to get every change of a
		// thousand jobs at once.
		e := newEnv(t, db, &sluiceweb.Options{Authorize: sluiceweb.AllowAll, StreamBuffer: 10_000, StreamRate: -1})
		const jobs = 1000
		ids := e.enqueueBatch(jobs)
		everything := e.rawEvents("api/events", 0).collect()
		streams := make(map[string]*rawStream, jobs)
		for id := range ids {
			streams[id] = e.rawEvents("api/events?ids="+id, 0)
		}
		for n, action := range []string{"cancel", "requeue", "delete"} {
			var res struct {
				Count int `json:"count"`
			}
			e.do("POST", "api/jobs/"+action, `{"topics": ["mail"]}`).json(t, http.StatusOK, &res)
			require.Equal(t, jobs, res.Count, action)
			everything.await(t, func(evs []sseEvent) bool { return len(evs) >= (n+1)*jobs })
		}

		// What each stream of one job gets is exactly what the stream of
		// everything got of that job: its cancel, requeue and delete.
		all := everything.await(t, func([]sseEvent) bool { return true })
		require.Len(t, all, 3*jobs)
		require.Equal(t, 3*jobs, jobsIn(t, all, ids))
		requireConsecutive(t, all)
		byJob := map[string][]string{}
		for _, ev := range all {
			ch := ev.change(t)
			byJob[ch.Job.ID] = append(byJob[ch.Job.ID], ev.id+" "+ch.Kind)
		}
		for id, s := range streams {
			var got []string
			for len(got) < len(byJob[id]) {
				ev := s.next()
				ch := ev.change(t)
				require.Equal(t, id, ch.Job.ID)
				got = append(got, ev.id+" "+ch.Kind)
			}
			require.Len(t, got, 3)
			require.Equal(t, byJob[id], got)
			require.True(t, strings.HasSuffix(got[0], " cancelled") && strings.HasSuffix(got[1], " requeued") &&
				strings.HasSuffix(got[2], " deleted"), "%v", got)
		}
	})
}

// watcher is what the tests use of a client's change feed.
type watcher interface {
	Watch(ctx context.Context, opts *sluice.WatchOptions) (*sluice.ChangeSubscription, error)
}

// keepFeed keeps the feed of e's client running until the test ends.
func (e *env) keepFeed() {
	e.t.Helper()
	sub, err := e.client.(watcher).Watch(e.t.Context(), nil)
	require.NoError(e.t, err)
	e.t.Cleanup(sub.Close)
}

// closeAll closes streams and waits until the handler serves none.
func (e *env) closeAll(streams ...*rawStream) {
	e.t.Helper()
	for _, s := range streams {
		require.NoError(e.t, s.conn.Close())
	}
	require.Eventually(e.t, func() bool { return sluiceweb.OpenStreams(e.h) == 0 }, 15*time.Second, 5*time.Millisecond)
}

func TestEventsResumeAfterEveryStreamHasGone(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		e.keepFeed()
		first := e.rawEvents("api/events", 0)
		id := e.enqueue(nil)
		seen := first.next()
		require.Equal(t, id, seen.change(t).Job.ID)
		e.closeAll(first)

		// What happened while no stream was open is sent to the one that
		// resumes.
		missed := []string{e.enqueue(nil), e.enqueue(nil), e.enqueue(nil)}
		resumed := e.rawEvents("api/events?last_event_id="+seen.id, 0)
		for _, id := range missed {
			ev := resumed.next()
			require.Equal(t, "job", ev.name)
			require.Equal(t, id, ev.change(t).Job.ID)
		}
	})
}

func TestEventsResetAResumeAfterTheFeedRestarted(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil) // the feed stops with its last stream
		first := e.rawEvents("api/events", 0)
		e.enqueue(nil)
		seen := first.next()
		e.closeAll(first)
		e.enqueue(nil)

		resumed := e.rawEvents("api/events?last_event_id="+seen.id, 0)
		ev := resumed.next()
		require.Equal(t, "reset", ev.name)
		require.NotEqual(t, seen.id, ev.id)
		later := e.enqueue(nil)
		require.Equal(t, later, resumed.next().change(t).Job.ID)
	})
}
