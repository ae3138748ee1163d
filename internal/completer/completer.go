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
type Completer struct {
	exec   driver.Executor
	logger *slog.Logger
	in     chan Item

	// giveUp ends retries of a failing write once Stop's context ends.
	giveUp context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a completer writing through exec and starts its goroutine.
// Its queue holds up to capacity items; Add blocks while it is full. Stop
// must be called to end the goroutine.
func New(exec driver.Executor, logger *slog.Logger, capacity int) *Completer {
	ctx, cancel := context.WithCancel(context.Background())
	c := &Completer{
		exec:   exec,
		logger: logger,
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

// Stop writes everything queued, then returns. If a write keeps failing
// until ctx ends, what is unwritten is given up: those jobs stay processing
// until their leases expire and the rescuer takes them back.
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

// write writes one batch, retrying with a growing pause while the database
// fails, until it succeeds or the completer gives up.
func (c *Completer) write(batch []Item) {
	params := &driver.JobFinalizeParams{Jobs: make([]*driver.JobFinalize, len(batch))}
	for i, item := range batch {
		params.Jobs[i] = item.Finalize
	}
	pause := 10 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(c.giveUp, 30*time.Second)
		matched, err := c.exec.JobFinalize(ctx, params)
		cancel()
		if err == nil {
			for i, item := range batch {
				if item.Done != nil {
					item.Done(matched[i], nil)
				}
			}
			return
		}
		if c.giveUp.Err() != nil {
			c.logger.Error("sluice: giving up finalizing jobs; their leases will expire and they will run again",
				"jobs", len(batch), "error", err)
			for _, item := range batch {
				if item.Done != nil {
					item.Done(false, err)
				}
			}
			return
		}
		c.logger.Warn("sluice: finalizing jobs failed; retrying", "jobs", len(batch), "error", err, "pause", pause)
		select {
		case <-time.After(pause):
		case <-c.giveUp.Done():
		}
		pause = min(2*pause, 5*time.Second)
	}
}
