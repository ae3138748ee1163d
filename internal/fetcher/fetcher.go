// Package fetcher runs the claim loop of one queue: it claims as many due
// jobs as the queue has free worker slots, hands them to the client, and
// sleeps until a slot frees, a wake-up arrives, or the poll interval passes.
package fetcher

import (
	"context"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// Config configures a Fetcher.
type Config struct {
	Exec          driver.Executor
	ClientID      string
	Queue         string
	Topics        []string
	MaxWorkers    int
	PollInterval  time.Duration
	LeaseDuration time.Duration
	Clock         func() time.Time
	Logger        *slog.Logger
	// Start starts working a claimed job. It must not block; the fetcher's
	// Done must be called once the job's slot is free again.
	Start func(row *driver.JobRow)
}

// burst is the schedule of quick re-polls after a wake-up for jobs
// enqueued in a transaction that had not committed yet: the commit usually
// follows within milliseconds, and waiting a whole poll interval for it
// would add latency for nothing.
var burst = [...]time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond,
}

// coalesce is how long a hot claim loop (one whose last claim was full, so
// that more jobs are likely waiting) may wait for all its slots to free
// before claiming for fewer. Claiming one job per freed slot makes many tiny
// claims, each a write transaction; waiting for the slots makes few full
// ones, and the cap bounds how long a freed slot can idle behind slower
// jobs.
const coalesce = time.Millisecond

// Fetcher claims jobs of one queue.
type Fetcher struct {
	cfg     Config
	running atomic.Int64
	freed   chan struct{}
	wake    chan bool
	wakeAt  chan time.Time
}

// New returns a fetcher; Run runs it.
func New(cfg Config) *Fetcher {
	return &Fetcher{
		cfg:    cfg,
		freed:  make(chan struct{}, 1),
		wake:   make(chan bool, 1),
		wakeAt: make(chan time.Time, 16),
	}
}

// Done frees the slot of a job handed to Start.
func (f *Fetcher) Done() {
	f.running.Add(-1)
	select {
	case f.freed <- struct{}{}:
	default:
	}
}

// Running returns how many jobs hold a slot.
func (f *Fetcher) Running() int { return int(f.running.Load()) }

// Wake asks for a claim at once. committed is false when the new jobs may
// belong to a transaction that has not committed yet.
func (f *Fetcher) Wake(committed bool) {
	select {
	case f.wake <- committed:
	default:
		if !committed {
			return
		}
		// A pending uncommitted wake-up is upgraded by draining it.
		select {
		case <-f.wake:
		default:
		}
		select {
		case f.wake <- true:
		default:
		}
	}
}

// WakeAt asks for a claim at t, when a job enqueued by this process for
// later becomes due.
func (f *Fetcher) WakeAt(t time.Time) {
	select {
	case f.wakeAt <- t:
	default: // the poll will find it
	}
}

// Run claims and starts jobs until ctx ends. It does not wait for started
// jobs.
func (f *Fetcher) Run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	// wakes are the times callers asked to be woken at, earliest first; a
	// reschedule never postpones past the first.
	var deadline time.Time
	var wakes []time.Time
	schedule := func(at time.Time) {
		if len(wakes) > 0 && wakes[0].Before(at) {
			at = wakes[0]
		}
		deadline = at
		timer.Reset(time.Until(at))
	}
	due, step := true, len(burst)
	hot := false // the last claim was full
	gather := time.NewTimer(0)
	defer gather.Stop()
	gathering := false
	for {
		if free := f.cfg.MaxWorkers - f.Running(); due && free > 0 {
			if hot && free < f.cfg.MaxWorkers && !gathering {
				gathering = true
				gather.Reset(coalesce)
			} else if !hot || free >= f.cfg.MaxWorkers || !gathering {
				gathering = false
				n, err := f.claim(ctx, free)
				if ctx.Err() != nil {
					return
				}
				hot = err == nil && n == free
				due = hot
				switch {
				case err != nil:
					schedule(time.Now().Add(min(f.cfg.PollInterval, time.Second)))
				case n > 0:
					step = len(burst)
					schedule(time.Now().Add(f.cfg.PollInterval))
				case step < len(burst):
					schedule(time.Now().Add(burst[step]))
					step++
				default:
					schedule(time.Now().Add(f.cfg.PollInterval))
				}
				continue
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-f.freed:
		case <-gather.C:
			if gathering {
				gathering, hot = false, false
			}
		case committed := <-f.wake:
			due = true
			if !committed {
				step = 0
			}
		case <-timer.C:
			due = true
			now := time.Now()
			for len(wakes) > 0 && !wakes[0].After(now) {
				wakes = wakes[1:]
			}
		case at := <-f.wakeAt:
			at = time.Now().Add(at.Sub(f.cfg.Clock())) // from the client's clock to the timer's
			wakes = addWake(wakes, at)
			if at.Before(deadline) {
				schedule(at)
			}
		}
	}
}

// maxWakes bounds the wake-up times a fetcher remembers; beyond it the
// latest are dropped and found by polling.
const maxWakes = 256

// addWake inserts at into wakes, kept sorted and at most maxWakes long.
func addWake(wakes []time.Time, at time.Time) []time.Time {
	i, _ := slices.BinarySearchFunc(wakes, at, time.Time.Compare)
	wakes = slices.Insert(wakes, i, at)
	if len(wakes) > maxWakes {
		wakes = wakes[:maxWakes]
	}
	return wakes
}

// claimTimeout bounds one claim.
const claimTimeout = 30 * time.Second

// claim claims up to limit jobs and starts them, returning how many. The
// claim itself ignores ctx's cancellation: a claim that committed but
// reported the cancellation would leave jobs claimed and never started until
// their leases expired. Jobs claimed while ctx ended are started all the
// same; Stop waits for them.
func (f *Fetcher) claim(ctx context.Context, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	claimCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	defer cancel()
	now := f.cfg.Clock()
	rows, err := f.cfg.Exec.JobClaim(claimCtx, &driver.JobClaimParams{
		ClientID:    f.cfg.ClientID,
		Queue:       f.cfg.Queue,
		Topics:      f.cfg.Topics,
		Limit:       limit,
		Now:         now,
		LockedUntil: now.Add(f.cfg.LeaseDuration),
	})
	if err != nil {
		if ctx.Err() == nil {
			f.cfg.Logger.Warn("sluice: claiming jobs failed", "queue", f.cfg.Queue, "error", err)
		}
		return 0, err
	}
	f.running.Add(int64(len(rows)))
	for _, row := range rows {
		f.cfg.Start(row)
	}
	return len(rows), nil
}
