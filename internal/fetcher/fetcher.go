// Package fetcher runs the claim loop of one queue: it claims as many due
// jobs as the queue has free worker slots, hands them to the client, and
// sleeps until a slot frees, a wake-up arrives, or the poll interval passes.
package fetcher

import (
	"context"
	"log/slog"
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
	// Flow, if not nil, reports whether claims must obey the queue's
	// stored state (driver.JobClaimParams.Flow).
	Flow func() bool
	// Keyed, if not nil, reports whether claims must obey the stored
	// limits of the queue and its topics (driver.JobClaimParams.Keyed).
	Keyed func() bool
}

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
// jobs. When to claim, and how many, is the pacer's to decide; Run does the
// claiming and keeps the timers.
func (f *Fetcher) Run(ctx context.Context) {
	p := newPacer(f.cfg.MaxWorkers, f.cfg.PollInterval)
	timer := time.NewTimer(0)
	defer timer.Stop()
	gather := time.NewTimer(0)
	defer gather.Stop()
	for {
		switch d := p.next(time.Now(), f.cfg.MaxWorkers-f.Running()); d.action {
		case claimNow:
			n, err := f.claim(ctx, d.limit)
			if ctx.Err() != nil {
				return
			}
			timer.Reset(time.Until(p.claimed(time.Now(), n, err)))
			continue
		case startGather:
			gather.Reset(time.Until(d.at))
		}
		select {
		case <-ctx.Done():
			return
		case <-f.freed:
		case <-gather.C:
			p.gathered()
		case committed := <-f.wake:
			p.woken(committed)
		case <-timer.C:
			p.polled(time.Now())
		case at := <-f.wakeAt:
			at = time.Now().Add(at.Sub(f.cfg.Clock())) // from the client's clock to the timer's
			if deadline, ok := p.wakeAt(at); ok {
				timer.Reset(time.Until(deadline))
			}
		}
	}
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
		Flow:        f.cfg.Flow != nil && f.cfg.Flow(),
		Keyed:       f.cfg.Keyed != nil && f.cfg.Keyed(),
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
