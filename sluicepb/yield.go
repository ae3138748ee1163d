package sluicepb

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"
)

// DefaultYieldToRequests is how long a claim of new jobs waits at most for
// the app's writing requests unless Config.YieldToRequests says otherwise.
const DefaultYieldToRequests = 10 * time.Millisecond

// MaxYieldToRequests is the longest Config.YieldToRequests may be: the
// claim's lease is counted from before it waits.
const MaxYieldToRequests = time.Second

const (
	// servingWindow is how recent the app's last request must be for the
	// app to count as serving.
	servingWindow = 100 * time.Millisecond
	// claimPause is the pause the queue leaves the processors before each
	// claim while the app is serving.
	claimPause = 500 * time.Microsecond
)

// requestGate makes the queue's claims give way to the app's requests
// (see Config.YieldToRequests).
//
// PocketBase has one write connection, and the queue shares it: a claim
// taken while a record is being created makes the create wait for the
// claim's transaction, and the jobs it claims then compete with the
// request for the processors. So a claim waits while requests that may
// write are in flight. And a queue that burns a backlog at full speed
// keeps every processor busy, which delays the Go runtime's reading of
// the network (while no processor is idle it reads it only every 10 ms or
// so): so while the app is serving, each claim first leaves the
// processors a short pause. Jobs already claimed run, and their
// completions are written, all the while.
type requestGate struct {
	max time.Duration
	// id names the middleware, one per queue of the app.
	id string
	// start is when the gate was made, and seen when the last request of
	// any kind came, in nanoseconds since start: monotonic, whatever the
	// wall clock does.
	start time.Time
	seen  atomic.Int64

	mu sync.Mutex
	n  int // writing requests in flight
	// idle is closed when n drops to zero; a new one is made when n
	// leaves zero.
	idle chan struct{}
}

// writes reports whether a request with method may write: every method
// but GET, HEAD and OPTIONS. Long-lived requests (the realtime and event
// streams, file downloads) are GETs, and never hold claims.
func writes(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// enter counts a writing request in.
func (g *requestGate) enter() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n++
	if g.n == 1 {
		g.idle = make(chan struct{})
	}
}

// leave counts a writing request out.
func (g *requestGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.n == 0 {
		close(g.idle)
	}
}

// newRequestGate returns a gate whose claims wait at most max, for the
// queue in table.
func newRequestGate(max time.Duration, table string) *requestGate {
	g := &requestGate{max: max, id: "sluicepbYieldToRequests_" + table, start: time.Now()}
	g.seen.Store(-int64(servingWindow))
	return g
}

// serving reports whether the app has served a request within
// servingWindow.
func (g *requestGate) serving() bool {
	return time.Since(g.start)-time.Duration(g.seen.Load()) < servingWindow
}

// inRequestKey marks the context of a request the gate counts.
type inRequestKey struct{}

// wait is the driver's claim gate. While the app is serving it pauses for
// claimPause; then it returns when no writing request is in flight, or
// g.max later, whichever comes first; or with ctx's error when ctx ends
// before. A claim made inside a request (its context comes from the
// request's) does not wait: it would wait for itself. With no request
// about, as in a queue burning a backlog on its own, it costs a clock
// reading and a lock.
func (g *requestGate) wait(ctx context.Context) error {
	if ctx.Value(inRequestKey{}) != nil {
		return nil
	}
	if g.serving() {
		pause := time.NewTimer(claimPause)
		defer pause.Stop()
		select {
		case <-pause.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	g.mu.Lock()
	n, idle := g.n, g.idle
	g.mu.Unlock()
	if n == 0 {
		return nil
	}
	t := time.NewTimer(g.max)
	defer t.Stop()
	select {
	case <-idle:
		return nil
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// handler is the router middleware that counts requests. It runs before
// every other, so a writing request counts from when PocketBase routes it
// until its handlers return (a panic included).
func (g *requestGate) handler() *hook.Handler[*core.RequestEvent] {
	return &hook.Handler[*core.RequestEvent]{
		Id:       g.id,
		Priority: -1_000_000,
		Func: func(e *core.RequestEvent) error {
			g.seen.Store(int64(time.Since(g.start)))
			if !writes(e.Request.Method) {
				return e.Next()
			}
			g.enter()
			defer g.leave()
			e.Request = e.Request.WithContext(context.WithValue(e.Request.Context(), inRequestKey{}, true))
			return e.Next()
		},
	}
}
