package sluicepb

import (
	"context"
	"slices"
	"sync"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// pbDriver is the SQLite driver over PocketBase's pools, with one more
// source of wake-ups: the commit of a PocketBase transaction that enqueued
// jobs (see [Jobs.EnqueueTx]). The SQLite driver tells its listeners of
// such jobs when they are inserted, before the commit, and the client then
// re-polls for a short while; a claim made meanwhile waits for the write
// connection the transaction holds, and usually finds the jobs once it
// commits. Telling the listeners again after the commit makes that
// certain, however long the transaction lasts.
type pbDriver struct {
	*sqlitedriver.Driver

	mu        sync.Mutex
	listeners []*commitListener
}

type commitListener struct {
	ctx context.Context
	fn  func(driver.Notification)
}

// Listen implements driver.Notifier: fn hears of the driver's inserts and
// of committed PocketBase transactions that enqueued jobs.
func (d *pbDriver) Listen(ctx context.Context, fn func(driver.Notification)) (stop func(), err error) {
	stopInner, err := d.Driver.Listen(ctx, fn)
	if err != nil {
		return stopInner, err
	}
	l := &commitListener{ctx: ctx, fn: fn}
	d.mu.Lock()
	d.listeners = append(d.listeners, l)
	d.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			stopInner()
			d.mu.Lock()
			d.listeners = slices.DeleteFunc(d.listeners, func(x *commitListener) bool { return x == l })
			d.mu.Unlock()
		})
	}, nil
}

// committed tells the listeners that jobs of queues were committed.
func (d *pbDriver) committed(queues []string) {
	d.mu.Lock()
	ls := slices.Clone(d.listeners)
	d.mu.Unlock()
	for _, l := range ls {
		for _, q := range queues {
			if l.ctx.Err() == nil {
				l.fn(driver.Notification{Queue: q, Committed: true})
			}
		}
	}
}

var _ driver.Notifier = (*pbDriver)(nil)
