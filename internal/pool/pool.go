// Package pool runs a client's jobs on goroutines that outlive one job.
//
// A goroutine started per job pays for itself on every job: it is created,
// its stack grows while the job decodes its arguments, and it is thrown
// away. Profiles of no-op burn-downs showed that cost (mostly stack
// copying) as a fifth of the client's CPU. A pool goroutine that finishes a
// job waits a while for the next one instead, so a busy queue reuses warm
// goroutines and an idle one holds none.
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
		idle.Reset(p.idle)
		p.waiting.Add(1)
		select {
		case item = <-p.handoff:
			p.waiting.Add(-1)
		case <-idle.C:
			p.waiting.Add(-1)
			p.wg.Done()
			return
		case <-p.quit:
			p.waiting.Add(-1)
			p.wg.Done()
			return
		}
	}
}

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
