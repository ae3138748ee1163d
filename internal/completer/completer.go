// Package completer batches the finalization of jobs the client finishes
// itself, so that many completions cost few statements.
package completer

import (
	"context"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// maxBatch is the most finalizations written in one call.
const maxBatch = 1000

// Item is one claim to end, with a callback told whether it matched.
type Item struct {
	// Finalize is the outcome to write.
	Finalize *driver.JobFinalize
	// Done, when not nil, is called once the outcome is written (or given
	// up on), with whether the claim still matched. It must not block.
	Done func(matched bool, err error)
}

// Completer writes finalizations in batches: while one batch is being
// written, the next accumulates. It adds no delay of its own, so a lone
// completion is written at once.
//
// A batch that fails is split, so that one item the database rejects cannot
// take the others down with it. Items that fail wait in a retry list, tried
// again with a growing pause between new batches, so they never hold new
// outcomes back, for up to the retry window (the database may be
// restarting); then they are given up: their jobs stay processing until
// their leases expire and the rescuer takes them back.
type Completer struct {
	exec   driver.Executor
	logger *slog.Logger
	window time.Duration
	in     chan Item

	// giveUp ends retries once Stop's context ends.
	giveUp context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a completer writing through exec and starts its goroutine.
// Its queue holds up to capacity items; Add blocks while it is full. Failing
// writes are retried for up to window. Stop must be called to end the
// goroutine.
func New(exec driver.Executor, logger *slog.Logger, capacity int, window time.Duration) *Completer {
	ctx, cancel := context.WithCancel(context.Background())
	c := &Completer{
		exec:   exec,
		logger: logger,
		window: window,
		in:     make(chan Item, capacity),
		giveUp: ctx,
		cancel: cancel,
		done:   make(chan struct{}),
	}
	go c.loop()
	return c
}

// Add queues one finalization. It must not be called after Stop.
func (c *Completer) Add(item Item) { c.in <- item }

// GiveUp makes every retry, current and future, give up at once, so that
// what is queued drains quickly.
func (c *Completer) GiveUp() { c.cancel() }

// Stop writes everything queued, then returns. If a write keeps failing
// until ctx ends, what is unwritten is given up.
func (c *Completer) Stop(ctx context.Context) {
	close(c.in)
	select {
	case <-c.done:
	case <-ctx.Done():
		c.cancel()
		<-c.done
	}
	c.cancel()
}

func (c *Completer) loop() {
	defer close(c.done)
	var (
		retries []retry
		batch   = make([]Item, 0, maxBatch)
		timer   = time.NewTimer(time.Hour)
	)
	defer timer.Stop()
	in := c.in
	for in != nil || len(retries) > 0 {
		// Giving up matters only to retries: listening for it without any
		// would spin once it has happened.
		var due <-chan time.Time
		var giveUp <-chan struct{}
		if len(retries) > 0 {
			timer.Reset(time.Until(earliest(retries)))
			due, giveUp = timer.C, c.giveUp.Done()
		}
		select {
		case first, ok := <-in:
			if !ok {
				in = nil // Stop: finish the retries, then end
				continue
			}
			batch = append(batch[:0], first)
			batch = drain(in, batch)
			retries = append(retries, c.failed(c.write(batch))...)
		case <-due:
			retries = c.retryDue(retries)
		case <-giveUp:
			retries = c.retryDue(retries) // gives everything up
		}
	}
}

// drain adds to batch what in holds now, up to maxBatch.
func drain(in <-chan Item, batch []Item) []Item {
	for len(batch) < maxBatch {
		select {
		case item, ok := <-in:
			if !ok {
				return batch
			}
			batch = append(batch, item)
		default:
			return batch
		}
	}
	return batch
}

// retry is an item waiting to be written again.
type retry struct {
	item     Item
	next     time.Time
	pause    time.Duration
	deadline time.Time
	err      error
}

func earliest(rs []retry) time.Time {
	t := rs[0].next
	for _, r := range rs[1:] {
		if r.next.Before(t) {
			t = r.next
		}
	}
	return t
}

// failed turns items that could not be written into retries.
func (c *Completer) failed(items []Item, err error) []retry {
	now := time.Now()
	rs := make([]retry, len(items))
	for i, item := range items {
		rs[i] = retry{item: item, next: now.Add(firstPause), pause: firstPause, deadline: now.Add(c.window), err: err}
	}
	return rs
}

// firstPause is the pause before an item's first retry; it doubles with
// each failure, up to maxPause.
const (
	firstPause = 10 * time.Millisecond
	maxPause   = 2 * time.Second
)

// retryDue writes the retries that are due, and returns those still
// waiting. An item whose retry window has passed, or any item once the
// completer gives up, is given up: logged and reported to Done, its job left
// processing until its lease expires and the rescuer takes it back.
func (c *Completer) retryDue(rs []retry) []retry {
	now := time.Now()
	var due []Item
	var waiting []retry
	byItem := map[*driver.JobFinalize]retry{}
	for _, r := range rs {
		if !r.next.After(now) || c.giveUp.Err() != nil {
			due = append(due, r.item)
			byItem[r.item.Finalize] = r
		} else {
			waiting = append(waiting, r)
		}
	}
	failed, err := c.write(due)
	for _, item := range failed {
		r := byItem[item.Finalize]
		r.err = err
		if c.giveUp.Err() != nil || now.After(r.deadline) {
			c.logger.Error("sluice: giving up finalizing a job; its lease will expire and it will run again",
				"job_id", item.Finalize.ID, "error", err)
			if item.Done != nil {
				item.Done(false, err)
			}
			continue
		}
		r.pause = min(2*r.pause, maxPause)
		r.next = now.Add(r.pause)
		waiting = append(waiting, r)
	}
	return waiting
}

// write writes items, and returns those that failed with the last error. If
// the whole batch fails, each item is tried alone, so that an item the
// database rejects does not take the others down with it.
func (c *Completer) write(items []Item) (failed []Item, err error) {
	if len(items) == 0 {
		return nil, nil
	}
	if err = c.try(items); err == nil {
		return nil, nil
	}
	if len(items) == 1 {
		c.logger.Warn("sluice: finalizing a job failed; will retry", "job_id", items[0].Finalize.ID, "error", err)
		return items, err
	}
	for _, item := range items {
		if e := c.try([]Item{item}); e != nil {
			failed, err = append(failed, item), e
		}
	}
	if len(failed) > 0 {
		c.logger.Warn("sluice: finalizing jobs failed; will retry", "jobs", len(failed), "error", err)
	}
	return failed, err
}

// tryTimeout bounds one write.
const tryTimeout = 10 * time.Second

// try writes items once and, on success, tells each whether it matched.
func (c *Completer) try(items []Item) error {
	params := &driver.JobFinalizeParams{Jobs: make([]*driver.JobFinalize, len(items))}
	for i, item := range items {
		params.Jobs[i] = item.Finalize
	}
	// Giving up stops retries, not a first try: what is queued when Stop's
	// deadline passes is still written once.
	ctx, cancel := context.WithTimeout(context.Background(), tryTimeout)
	defer cancel()
	matched, err := c.exec.JobFinalize(ctx, params)
	if err != nil {
		return err
	}
	for i, item := range items {
		if item.Done != nil {
			item.Done(matched[i], nil)
		}
	}
	return nil
}
