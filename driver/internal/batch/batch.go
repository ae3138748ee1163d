// Package batch groups requests that arrive together, so that one caller
// runs them as one.
//
// Most of a small write's cost is per statement and per commit. A [Queue]
// lets the writes that arrive while one runs wait in line; then one of
// their callers, the leader, takes the oldest waiting as a group and runs
// them with one call of the queue's run function, while the others (the
// followers) wait for their results. What a group does, and how a failure
// is shared among its members, is the run function's business.
package batch

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
)

// errPanicked is the result of a group's members that were not given one
// when the run function panicked.
var errPanicked = errors.New("batch: the group's run panicked; the outcome is unknown")

// Queue is a line of requests and the token whose holder, the leader, runs
// them.
//
// A request that arrives when nobody leads takes the token at once and
// runs without waiting, alone unless others came with it. One that
// arrives while a leader runs waits in line. A leader runs groups, oldest requests first, until its own
// request has run, then gives the token back, and the caller that has
// waited longest for it leads in turn: no caller works for others for
// long, and no request is left in line with nobody to run it.
//
// A caller whose context ends while its request is in line is removed and
// gets the context's error. Once a leader has taken a request, its caller
// waits for the result whatever happens to its context; the run function
// checks [Request.Ctx] just before running it.
type Queue[T any] struct {
	// token holds a value while someone leads (or holds [Queue.Lock]).
	token   chan struct{}
	maxSize int
	size    func(T) int
	run     func(group []*Request[T])
	yield   bool

	mu      sync.Mutex
	pending []*Request[T]
	// group is the leader's group, its backing array reused from one
	// group to the next; only the token's holder touches it.
	group []*Request[T]
}

// Request is one caller's request, as the run function sees it.
type Request[T any] struct {
	// Ctx is the caller's context. The run function checks it just before
	// it runs the request, and gives the request its error if it has
	// ended; it need not run the request under Ctx.
	Ctx context.Context
	// Val is what the caller asked for.
	Val T
	// Err is the request's result, set by the run function: what
	// [Queue.Do] returns to the caller.
	Err error

	done chan struct{}
	// taken is set, under Queue.mu, when a leader takes the request.
	taken bool
}

// New returns an empty queue whose leaders run each group with run, which
// sets every member's Err. A group holds the oldest requests waiting
// whose sizes add up to at most maxSize, and at least one request,
// whatever its size. size gives a request's size; nil counts each request
// as 1.
//
// run is called by one leader at a time, never concurrently with itself,
// and must not keep the group's slice after it returns.
func New[T any](maxSize int, size func(T) int, run func(group []*Request[T])) *Queue[T] {
	return &Queue[T]{token: make(chan struct{}, 1), maxSize: maxSize, size: size, run: run}
}

// YieldFirst makes a caller that finds nobody leading yield its processor
// once (runtime.Gosched) before it leads: requests that goroutines ready
// to run are about to make then join its group rather than wait for the
// next. When no other goroutine is ready it costs a call; call it before
// the queue is used.
func (q *Queue[T]) YieldFirst() { q.yield = true }

// Do puts v in line and returns its result once a leader, perhaps the
// caller itself, has run it. If ctx ends before a leader takes the
// request, Do removes it and returns ctx's error; after, it waits for the
// result.
func (q *Queue[T]) Do(ctx context.Context, v T) error {
	r := &Request[T]{Ctx: ctx, Val: v, done: make(chan struct{})}
	q.mu.Lock()
	q.pending = append(q.pending, r)
	q.mu.Unlock()
	select {
	case q.token <- struct{}{}:
		if q.yield {
			runtime.Gosched()
		}
	default:
		if lead := q.wait(ctx, r); !lead {
			return r.Err
		}
	}
	q.lead(r)
	// Done: by this caller, or by a leader that took r before giving the
	// token back.
	<-r.done
	return r.Err
}

// wait waits until r is done, ended by ctx, or its caller holds the token
// and leads; it reports the last. When it returns false, r.Err is the
// request's result.
func (q *Queue[T]) wait(ctx context.Context, r *Request[T]) (lead bool) {
	select {
	case q.token <- struct{}{}:
		return true
	case <-r.done:
		return false
	case <-ctx.Done():
	}
	q.mu.Lock()
	if !r.taken {
		q.remove(r)
		q.mu.Unlock()
		r.Err = ctx.Err()
		return false
	}
	q.mu.Unlock()
	<-r.done // a leader is running it
	return false
}

// remove takes r out of the line. The caller holds q.mu.
func (q *Queue[T]) remove(r *Request[T]) {
	if i := slices.Index(q.pending, r); i >= 0 {
		q.pending = slices.Delete(q.pending, i, i+1)
	}
}

// lead runs groups until own has been taken, then gives the token back.
// The caller holds the token.
func (q *Queue[T]) lead(own *Request[T]) {
	defer q.Unlock()
	for {
		group, ownTaken := q.take(own)
		q.runGroup(group)
		if ownTaken {
			return
		}
	}
}

// take marks the oldest requests in line as taken and returns them as a
// group (none when own was taken before), and whether own has been taken.
func (q *Queue[T]) take(own *Request[T]) (group []*Request[T], ownTaken bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if own.taken {
		return nil, true
	}
	n, size := 0, 0
	for ; n < len(q.pending); n++ {
		s := 1
		if q.size != nil {
			s = q.size(q.pending[n].Val)
		}
		if n > 0 && size+s > q.maxSize {
			break
		}
		size += s
	}
	group = append(q.group[:0], q.pending[:n]...)
	for _, r := range group {
		r.taken = true
	}
	rest := copy(q.pending, q.pending[n:])
	clear(q.pending[rest:])
	q.pending = q.pending[:rest]
	q.group = group
	return group, own.taken
}

// runGroup runs group and lets its members' callers have their results.
func (q *Queue[T]) runGroup(group []*Request[T]) {
	if len(group) == 0 {
		return
	}
	ran := false
	defer func() {
		for _, r := range group {
			if !ran && r.Err == nil {
				r.Err = errPanicked
			}
			close(r.done)
		}
		clear(group) // keep no finished request alive
	}()
	q.run(group)
	ran = true
}

// Lock takes the token, as a leader does, but runs nothing: until
// [Queue.Unlock], no group runs, and requests that arrive wait in line. It
// returns ctx's error if ctx ends first. Lock is for work that must not
// run at the same time as any group, such as a schema migration.
func (q *Queue[T]) Lock(ctx context.Context) error {
	select {
	case q.token <- struct{}{}:
		return nil
	default:
	}
	select {
	case q.token <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Unlock gives back the token taken by [Queue.Lock]; the caller that has
// waited longest for it, if any, leads.
func (q *Queue[T]) Unlock() { <-q.token }
