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
	// seen is when the last request of any kind came, in Unix nanoseconds.
	seen atomic.Int64

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

// wait is the driver's claim gate. While the app is serving it pauses for
// claimPause; then it returns when no writing request is in flight, or
// g.max after it was called, whichever comes first; or with ctx's error
// when ctx ends before.
func (g *requestGate) wait(ctx context.Context) error {
	t := time.NewTimer(g.max)
	defer t.Stop()
	if time.Since(time.Unix(0, g.seen.Load())) < servingWindow {
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
// until its answer is written.
func (g *requestGate) handler() *hook.Handler[*core.RequestEvent] {
	return &hook.Handler[*core.RequestEvent]{
		Id:       "sluicepbYieldToRequests",
		Priority: -1_000_000,
		Func: func(e *core.RequestEvent) error {
			g.seen.Store(time.Now().UnixNano())
			if !writes(e.Request.Method) {
				return e.Next()
			}
			g.enter()
			defer g.leave()
			return e.Next()
		},
	}
}
