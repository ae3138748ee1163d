// Package pool runs a client's jobs on goroutines that outlive one job.
//
// A goroutine started per job pays for itself on every job: it is created,
// its stack grows while the job decodes its arguments, and it is thrown
// away. Profiles of no-op burn-downs showed that cost (mostly stack
// copying) as a fifth of the client's CPU. A pool goroutine that finishes a
// job waits a while for the next one instead, so a busy queue reuses warm
// goroutines and an idle one holds none; while it waits it holds a reserve
// of stack, so that garbage collections leave it the stack its jobs grew
// (see stackReserve).
package pool

import (
	"sync"
	"sync/atomic"
	"time"
)

// Pool hands items to goroutines that run fn on them. The zero value is not
// usable; call New.
type Pool[T any] struct {
	fn      func(T) bool
	idle    time.Duration
	handoff chan T
	quit    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
	// started and waiting count the goroutines started and those waiting
	// for an item, for tests.
	started, waiting atomic.Int32
}

// New returns a pool whose goroutines call fn on each item they are handed
// and exit after waiting idle for the next one that long. fn returns false
// when its goroutine must exit at once: the goroutine was released with
// Release while fn ran (see Release).
func New[T any](idle time.Duration, fn func(T) bool) *Pool[T] {
	return &Pool[T]{fn: fn, idle: idle, handoff: make(chan T), quit: make(chan struct{})}
}

// Go runs fn on item, on a waiting goroutine if one is free, else on a new
// one. It never blocks. It must not be called after Close.
func (p *Pool[T]) Go(item T) {
	select {
	case p.handoff <- item:
	default:
		p.wg.Add(1)
		p.started.Add(1)
		go p.loop(item)
	}
}

func (p *Pool[T]) loop(item T) {
	idle := time.NewTimer(p.idle)
	defer idle.Stop()
	for {
		if !p.fn(item) {
			return // released: Release has done wg.Done for it
		}
		var ok bool
		if item, ok = p.wait(idle); !ok {
			return
		}
	}
}

// stackReserve is how much stack a waiting goroutine holds in use, so that
// a garbage collection does not shrink the stack its jobs grew.
//
// A collection halves the stack of a goroutine that uses less than a
// quarter of it (counting 800 bytes the runtime keeps free), and a
// goroutine waiting in a select uses some 600 bytes. With many workers and
// a collection every thousand jobs or so, each job then found its stack
// halved and grew it back, copying it: a job logging one line through
// sluice.Logger needs 8 KiB of stack, and paid more for that copy than for
// the line. Held while waiting, 1.5 KiB (2.1 KiB of stack in use in all)
// keeps stacks of up to 8 KiB as they are; larger ones are halved to 8 KiB.
//
// The price is memory: a waiting goroutine's stack is 4 or 8 KiB, not 2 to
// 8. And the runtime starts new goroutines with the average stack in use
// at the last collection, plus a margin, rounded up: in a process whose
// goroutines are mostly waiting workers, that goes from 2 to 4 KiB. (A
// reserve that kept 16 KiB stacks would make it 8 KiB.) The runtime's rules
// are not part of Go's promises; if they change, this costs a little memory
// and saves nothing.
const stackReserve = 1536

// wait waits for the next item, holding stackReserve bytes of stack: a
// function of its own, so that the reserve is on the stack only while the
// goroutine waits, never under a job. ok is false when the goroutine must
// exit: its idle time passed or the pool closed.
//
//go:noinline
func (p *Pool[T]) wait(idle *time.Timer) (item T, ok bool) {
	var reserve [stackReserve]byte
	hold(&reserve)
	idle.Reset(p.idle)
	p.waiting.Add(1)
	select {
	case item = <-p.handoff:
		ok = true
	case <-idle.C:
	case <-p.quit:
	}
	p.waiting.Add(-1)
	if !ok {
		p.wg.Done()
	}
	return item, ok
}

// hold keeps the compiler from leaving the reserve out of wait's frame.
//
//go:noinline
func hold(*[stackReserve]byte) {}

// Release stops counting, for Close, a goroutine that is stuck in fn: the
// caller has taken over what fn would have done, and fn must return false
// when it ends. Call it at most once per such run.
func (p *Pool[T]) Release() { p.wg.Done() }

// Close makes waiting goroutines exit and waits for every goroutine that
// is not stuck in a released run. Runs in progress finish first; Close is
// meant to be called once no item is running, and is idempotent.
func (p *Pool[T]) Close() {
	p.once.Do(func() { close(p.quit) })
	p.wg.Wait()
}
