package sluiceweb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluiceweb/internal/fanout"
)

// DefaultStreamBuffer is how many events an event stream holds for a
// reader that falls behind, when Options.StreamBuffer is not set.
const DefaultStreamBuffer = 1024

// DefaultStreamRate is how many events a second an event stream sends at
// most, when Options.StreamRate is not set: at some 330 bytes an event,
// 33 KB/s, more than a page that refetches what it shows a few times a
// second has use for.
const DefaultStreamRate = 100

// feedBuffer is the buffer of the streams' subscription to the change
// feed: larger than what one read of the feed reports at most, in three
// parts of DefaultFeedMaxRows.
const feedBuffer = 16 << 10

// pumpBatch is the most changes the pump encodes and publishes at once.
const pumpBatch = 512

// streams serves a handler's event streams from one subscription to its
// client's change feed and one to its log records, however many streams
// are open: each change is encoded at most once, into a fanout.Event that
// every stream selecting it shares, and not at all if none selects it
// (see package fanout).
//
// The subscriptions live in a session, which the first stream starts and
// the last one's leaving stops. A session that starts after another
// resumes the feed after the last change the one before saw, so the
// fanout hub's history goes on, and a browser that reconnects resumes in
// it; when the feed no longer has those changes, the history restarts.
type streams struct {
	c      client
	logger *slog.Logger
	hub    *fanout.Hub

	mu sync.Mutex
	// open counts the streams joined or joining; sess is the session,
	// nil when none runs; latest is the session started last, which the
	// next one waits for.
	open   int
	sess   *session
	latest *session
}

// session is one run of the streams' subscriptions.
type session struct {
	ctx    context.Context
	cancel context.CancelFunc
	// ready is closed once the session publishes, or failed with err.
	ready chan struct{}
	err   error
	done  chan struct{}
}

// newStreams returns the streams of a client, each holding up to buffer
// events and sending up to rate a second (none when negative).
func newStreams(c client, logger *slog.Logger, buffer, rate int) *streams {
	return &streams{c: c, logger: logger, hub: fanout.New(fanout.Config{Buffer: buffer,
		History: sluice.DefaultFeedHistory, Reset: resetFrame, Rate: float64(max(rate, 0))})}
}

// join returns a stream of the changes and records f selects, after the
// change named after if not empty (see fanout.Hub.Join), once a session
// runs. It fails with the session's error if the feed cannot start, or
// ctx's. Leave the stream when done.
func (ss *streams) join(ctx context.Context, f fanout.Filter, after string) (*fanout.Stream, error) {
	ss.mu.Lock()
	ss.open++
	if ss.sess == nil {
		ss.sess = ss.start()
	}
	sess := ss.sess
	ss.mu.Unlock()
	select {
	case <-sess.ready:
	case <-ctx.Done():
		ss.leave(nil)
		return nil, ctx.Err()
	}
	if sess.err != nil {
		ss.leave(nil)
		return nil, sess.err
	}
	return ss.hub.Join(f, after), nil
}

// leave removes s (nil for a stream that never joined the hub) and stops
// the session when no stream is left.
func (ss *streams) leave(s *fanout.Stream) {
	if s != nil {
		ss.hub.Leave(s)
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.open--; ss.open == 0 && ss.sess != nil {
		ss.sess.cancel()
		ss.sess = nil
	}
}

// start starts a session, which waits for the one before to end; ss.mu
// is held.
func (ss *streams) start() *session {
	ctx, cancel := context.WithCancel(context.Background())
	sess := &session{ctx: ctx, cancel: cancel, ready: make(chan struct{}), done: make(chan struct{})}
	go ss.run(sess, ss.latest)
	ss.latest = sess
	return sess
}

// run runs sess: it subscribes, then publishes what the subscriptions
// receive until sess is cancelled. If the feed ends the subscription, it
// ends every stream.
func (ss *streams) run(sess *session, prev *session) {
	defer close(sess.done)
	if prev != nil {
		<-prev.done
	}
	after := ss.hub.Last()
	sub, err := ss.c.Watch(sess.ctx, &sluice.WatchOptions{After: after, Buffer: feedBuffer})
	if err != nil {
		sess.err = err
		if sess.ctx.Err() != nil {
			sess.err = errors.New("the event streams are stopping")
		}
		ss.mu.Lock()
		if ss.sess == sess {
			ss.sess = nil
		}
		ss.mu.Unlock()
		close(sess.ready)
		return
	}
	defer sub.Close()
	logs := ss.c.Subscribe(sluice.EventLogged)
	defer logs.Close()

	var batch []*fanout.Event
	if after == "" {
		ss.hub.Restart(sub.Start)
	} else {
		// The feed has put what it replays, or a reset, in sub.C.
		select {
		case ch, ok := <-sub.C:
			switch {
			case !ok:
			case ch.Kind == sluice.ChangeReset:
				ss.hub.Restart(ch.ID)
			default:
				batch = append(batch, ss.encodeChange(ch))
			}
		default:
		}
	}
	ss.hub.Publish(batch)
	close(sess.ready)
	ss.pump(sess, sub, logs, batch[:0])
}

// pump publishes what the subscriptions receive, as many changes at once
// as have come, until sess is cancelled or the feed ends sub.
func (ss *streams) pump(sess *session, sub *sluice.ChangeSubscription, logs *sluice.Subscription, batch []*fanout.Event) {
	for {
		select {
		case <-sess.ctx.Done():
			return
		case ch, ok := <-sub.C:
			if !ok {
				ss.ended(sess)
				return
			}
			batch = append(batch, ss.encodeChange(ch))
		more:
			for len(batch) < pumpBatch {
				select {
				case ch, ok := <-sub.C:
					if !ok {
						break more
					}
					batch = append(batch, ss.encodeChange(ch))
				default:
					break more
				}
			}
		case ev := <-logs.C:
			if ev.Log == nil {
				continue
			}
			batch = append(batch, ss.encodeLog(&ev))
		}
		ss.hub.Publish(batch)
		clear(batch)
		batch = batch[:0]
	}
}

// ended ends every stream of sess, whose subscription the feed closed,
// and lets the next stream start a session.
func (ss *streams) ended(sess *session) {
	ss.mu.Lock()
	if ss.sess == sess {
		ss.sess = nil
	}
	ss.mu.Unlock()
	ss.hub.End()
}

// encodeChange returns ch as an event, encoded when a stream first
// writes it (a change no stream selects costs no encoding); a change
// that cannot be encoded (a job's progress whose data is not JSON, say)
// is logged and sent as a resync, which tells browsers to refetch.
func (ss *streams) encodeChange(ch sluice.Change) *fanout.Event {
	name := EventJob
	switch ch.Kind {
	case sluice.ChangeResync:
		name = EventResync
	case sluice.ChangeReset:
		name = EventReset
	}
	ev := &fanout.Event{ID: ch.ID, Encode: func() []byte {
		name := name
		data, err := json.Marshal(ch)
		if err != nil {
			ss.logger.Error("sluiceweb: a change cannot be encoded; streams get a resync instead", "id", ch.ID, "error", err)
			name, data = EventResync, mustMarshal(sluice.Change{ID: ch.ID, Kind: sluice.ChangeResync, At: ch.At})
		}
		return fmt.Appendf(nil, "id: %s\nevent: %s\ndata: %s\n\n", ch.ID, name, data)
	}}
	if ch.Job != nil && name == EventJob {
		ev.Job, ev.Topic = ch.Job.ID, ch.Job.Topic
	}
	return ev
}

// encodeLog returns a record a worker of the serving client logged as an
// event named EventLog, without an id: it is not in the change feed, so a
// stream resumed after it resumes after the change before.
func (ss *streams) encodeLog(ev *sluice.Event) *fanout.Event {
	data, err := json.Marshal(logEvent{JobID: ev.Job.ID, Attempt: ev.Log.Attempt, Record: newLogRecord(ev.Log)})
	if err != nil {
		// Attributes are JSON the client made: this does not happen.
		ss.logger.Error("sluiceweb: a log record cannot be encoded", "job_id", ev.Job.ID, "error", err)
		return &fanout.Event{Job: ev.Job.ID, Topic: ev.Job.Topic}
	}
	return &fanout.Event{Job: ev.Job.ID, Topic: ev.Job.Topic, Frame: fmt.Appendf(nil, "event: %s\ndata: %s\n\n", EventLog, data)}
}

// resetFrame is the event that tells a stream's reader that it missed
// changes up to the one named id.
func resetFrame(id string) []byte {
	data := mustMarshal(sluice.Change{ID: id, Kind: sluice.ChangeReset, At: time.Now()})
	return fmt.Appendf(nil, "id: %s\nevent: %s\ndata: %s\n\n", id, EventReset, data)
}

// mustMarshal encodes a change without a job, which cannot fail.
func mustMarshal(ch sluice.Change) []byte {
	data, err := json.Marshal(ch)
	if err != nil {
		panic(err)
	}
	return data
}

// close stops the session, if any, and waits for the last one to end.
func (ss *streams) close() {
	ss.mu.Lock()
	sess := ss.latest
	ss.sess = nil
	ss.mu.Unlock()
	if sess != nil {
		sess.cancel()
		<-sess.done
	}
}
