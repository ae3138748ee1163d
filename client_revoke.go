package sluice

import (
	"context"
	"sync"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/tick"
)

// revokeInterval is how often a client asks the database whether it still
// holds the jobs it runs, so that a job cancelled or deleted from another
// process stops within about that long.
const revokeInterval = time.Second

// runningJobs are the jobs a run is working.
type runningJobs struct {
	mu   sync.Mutex
	jobs map[string]*jobRun
	// cancelled is the cause the run's jobs were cancelled with, once
	// cancelAll was called: a job tracked later is cancelled at once.
	cancelled error
}

// track records jr as running until untrack.
func (rj *runningJobs) track(jr *jobRun) {
	rj.mu.Lock()
	if rj.jobs == nil {
		rj.jobs = make(map[string]*jobRun)
	}
	rj.jobs[jr.row.ID] = jr
	cause := rj.cancelled
	rj.mu.Unlock()
	if cause != nil {
		jr.end(cause)
	}
}

// cancelAll ends the contexts of the running jobs, and of every job tracked
// from now on, with cause. It is idempotent; the first cause stays.
func (rj *runningJobs) cancelAll(cause error) {
	rj.mu.Lock()
	if rj.cancelled == nil {
		rj.cancelled = cause
	}
	cause = rj.cancelled
	jobs := make([]*jobRun, 0, len(rj.jobs))
	for _, jr := range rj.jobs {
		jobs = append(jobs, jr)
	}
	rj.mu.Unlock()
	for _, jr := range jobs {
		jr.end(cause)
	}
}

// untrack records that jr no longer runs. It does nothing if jr was
// untracked already, or if a later run of the same job took its place.
func (rj *runningJobs) untrack(jr *jobRun) {
	rj.mu.Lock()
	defer rj.mu.Unlock()
	if rj.jobs[jr.row.ID] == jr {
		delete(rj.jobs, jr.row.ID)
	}
}

// heldJobs are the jobs a run holds: claimed, and not yet ended by a
// written (or given up) outcome. The heartbeat extends their leases.
type heldJobs struct {
	mu sync.Mutex
	// n counts the claims of each job held: the next claim of a job the
	// run snoozed may come before the snooze's outcome is done with.
	n map[string]int
}

func (h *heldJobs) add(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		h.n = make(map[string]int)
	}
	h.n[id]++
}

func (h *heldJobs) remove(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n[id] <= 1 {
		delete(h.n, id)
		return
	}
	h.n[id]--
}

// ids returns the IDs of the held jobs, empty but not nil when there are
// none.
func (h *heldJobs) ids() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	ids := make([]string, 0, len(h.n))
	for id := range h.n {
		ids = append(ids, id)
	}
	return ids
}

// ids returns the IDs of the running jobs.
func (rj *runningJobs) ids() []string {
	rj.mu.Lock()
	defer rj.mu.Unlock()
	ids := make([]string, 0, len(rj.jobs))
	for id := range rj.jobs {
		ids = append(ids, id)
	}
	return ids
}

// revoke cancels the context of the running job id, if any, with the cause
// ErrLeaseLost, and marks it so that its unrecorded outcome is expected.
func (rj *runningJobs) revoke(id string) {
	rj.mu.Lock()
	defer rj.mu.Unlock()
	if jr := rj.jobs[id]; jr != nil {
		jr.revoked.Store(true)
		jr.end(ErrLeaseLost)
	}
}

// revoke stops the job id if this client is running it.
func (c *Client[TTx]) revoke(id string) {
	if r := c.run.Load(); r != nil {
		r.running.revoke(id)
	}
}

// watchRevoked asks, every revokeInterval until ctx ends, which of the
// running jobs the client still holds, and revokes the others: they were
// cancelled or deleted, or taken back after the lease expired.
func (c *Client[TTx]) watchRevoked(ctx context.Context, r *run) {
	tick.Every(ctx, revokeInterval, func() {
		ids := r.running.ids()
		if len(ids) == 0 {
			return
		}
		held, err := c.exec.JobHeld(ctx, &driver.JobHeldParams{ClientID: r.lockedBy, IDs: ids})
		if err != nil {
			if ctx.Err() == nil {
				c.cfg.Logger.Warn("sluice: checking for cancelled jobs failed", "error", err)
			}
			return
		}
		still := make(map[string]bool, len(held))
		for _, id := range held {
			still[id] = true
		}
		for _, id := range ids {
			if !still[id] {
				r.running.revoke(id)
			}
		}
	})
}
