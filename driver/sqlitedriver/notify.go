package sqlitedriver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sluicehq/sluice/driver"
)

// hub delivers insert notifications to the listeners of one driver, within
// the process. Listeners are kept in a copy-on-write slice, so notifying
// takes no lock and a listener's callback runs with no lock held.
type hub struct {
	mu        sync.Mutex // serializes changes to listeners
	listeners atomic.Pointer[[]*listener]
}

type listener struct {
	ctx     context.Context
	fn      func(driver.Notification)
	stopped atomic.Bool
}

// Listen calls fn with a queue's name each time this driver inserts jobs
// into that queue, until ctx ends or stop is called. Committed is true for
// jobs inserted through Executor, whose statement has committed, and false
// for jobs inserted through UnwrapExecutor, whose transaction may yet roll
// back. Only inserts made through this Driver value are seen: not those of
// other processes or of other drivers over the same database.
//
// fn runs on the inserting goroutine after the insert, with no lock held;
// it must not block. Once stop has returned or ctx has ended, no new call of
// fn starts. stop is idempotent, and the returned stop is never nil.
func (d *Driver) Listen(ctx context.Context, fn func(driver.Notification)) (stop func(), err error) {
	if fn == nil {
		return func() {}, errors.New("sqlitedriver: listen: nil func")
	}
	if err := ctx.Err(); err != nil {
		return func() {}, fmt.Errorf("sqlitedriver: listen: %w", err)
	}
	l := &listener{ctx: ctx, fn: fn}
	d.hub.update(func(ls []*listener) []*listener { return append(ls, l) })
	var once sync.Once
	remove := func() {
		once.Do(func() {
			l.stopped.Store(true)
			d.hub.update(func(ls []*listener) []*listener {
				return slices.DeleteFunc(ls, func(x *listener) bool { return x == l })
			})
		})
	}
	stopAfter := context.AfterFunc(ctx, remove)
	return func() {
		stopAfter()
		remove()
	}, nil
}

// update replaces the listener slice with fn's result on a copy of it.
func (h *hub) update(fn func([]*listener) []*listener) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var cur []*listener
	if p := h.listeners.Load(); p != nil {
		cur = slices.Clone(*p)
	}
	next := fn(cur)
	h.listeners.Store(&next)
}

// notifyInserted tells the listeners about the queues of the jobs results
// inserted (not the duplicates), once per queue.
func (h *hub) notifyInserted(results []driver.JobInsertResult, committed bool) {
	p := h.listeners.Load()
	if p == nil || len(*p) == 0 {
		return
	}
	var queues []string
	for _, r := range results {
		if !r.Duplicate && !slices.Contains(queues, r.Job.Queue) {
			queues = append(queues, r.Job.Queue)
		}
	}
	for _, l := range *p {
		for _, q := range queues {
			if l.stopped.Load() || l.ctx.Err() != nil {
				break
			}
			l.fn(driver.Notification{Queue: q, Committed: committed})
		}
	}
}
