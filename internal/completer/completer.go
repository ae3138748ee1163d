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
// hold back the others. Items that keep failing are retried with a growing
// pause for up to the retry window (the database may be restarting), then
// given up: their jobs stay processing until their leases expire and the
// rescuer takes them back.
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
	batch := make([]Item, 0, maxBatch)
	for first := range c.in {
		batch = append(batch[:0], first)
	drain:
		for len(batch) < maxBatch {
			select {
			case item, ok := <-c.in:
				if !ok {
					break drain
				}
				batch = append(batch, item)
			default:
				break drain
			}
		}
		c.write(batch)
	}
}

// tryTimeout bounds one write.
const tryTimeout = 10 * time.Second

// badItemTries is how many times an item that failed while others of its
// batch succeeded is tried before it is given up.
const badItemTries = 3

// write writes one batch. If it fails, each item is tried alone: when only
// some fail, the database is rejecting them, and they get a few more tries;
// when all fail, the database is likely unreachable, and they are retried
// for up to the retry window.
func (c *Completer) write(batch []Item) {
	if c.try(batch) == nil {
		return
	}
	if len(batch) > 1 {
		var failed []Item
		for _, item := range batch {
			if c.try([]Item{item}) != nil {
				failed = append(failed, item)
			}
		}
		if len(failed) == 0 {
			return
		}
		if len(failed) < len(batch) {
			c.retry(failed, badItemTries)
			return
		}
		batch = failed
	}
	c.retry(batch, 0)
}

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

// retry writes items with a growing pause between tries, until it succeeds,
// tries runs out (0 means no limit), the retry window passes, or the
// completer gives up. What is given up is logged and reported to Done.
func (c *Completer) retry(items []Item, tries int) {
	deadline := time.Now().Add(c.window)
	pause := 10 * time.Millisecond
	var err error
	for n := 1; ; n++ {
		c.logger.Warn("sluice: finalizing jobs failed; retrying", "jobs", len(items), "pause", pause)
		select {
		case <-time.After(pause):
		case <-c.giveUp.Done():
		}
		if err = c.try(items); err == nil {
			return
		}
		if c.giveUp.Err() != nil || (tries > 0 && n >= tries) || time.Now().After(deadline) {
			break
		}
		pause = min(2*pause, 2*time.Second)
	}
	c.logger.Error("sluice: giving up finalizing jobs; their leases will expire and they will run again",
		"jobs", len(items), "error", err)
	for _, item := range items {
		if item.Done != nil {
			item.Done(false, err)
		}
	}
}
