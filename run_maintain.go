package sluice

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/tick"
)

// The loops a run keeps beside its claim loops, each on its own interval:
// revocation checks, progress writes, presence and retention. (The
// heartbeat and the rescuer are in internal/lease.)

// revokeInterval is how often a client asks the database whether it still
// holds the jobs it runs, so that a job cancelled or deleted from another
// process stops within about that long.
const revokeInterval = time.Second

// watchRevoked asks, every revokeInterval until ctx ends, which of the
// running jobs the run still holds, and revokes the others: they were
// cancelled or deleted, or taken back after the lease expired.
func (r *run) watchRevoked(ctx context.Context) {
	tick.Every(ctx, revokeInterval, func() {
		ids := r.running.ids()
		if len(ids) == 0 {
			return
		}
		held, err := r.exec.JobHeld(ctx, &driver.JobHeldParams{ClientID: r.lockedBy, IDs: ids})
		if err != nil {
			if ctx.Err() == nil {
				r.cfg.Logger.Warn("sluice: checking for cancelled jobs failed", "error", err)
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

// writeProgress writes, in one driver call, the progress reported by the
// run's jobs since it last did and the records they logged (see Logger),
// and sends an EventProgressed for each job whose progress it stored. A
// write that fails is tried again at the next call; what matched no job
// (its attempt ended meanwhile) is dropped.
func (r *run) writeProgress(ctx context.Context) {
	runs, reports := r.running.progressed()
	items := make([]*driver.JobProgressUpdate, 0, len(runs))
	seqs := make([]uint64, 0, len(runs))
	for i, jr := range runs {
		u := &driver.JobProgressUpdate{ID: jr.row.ID, Attempt: jr.row.Attempt, LockedBy: jr.row.LockedBy}
		if reports[i] != nil {
			u.Progress = *reports[i]
		} else {
			u.KeepProgress = true
		}
		var seq uint64
		u.Logs, seq = jr.unwrittenLogs()
		if u.KeepProgress && u.Logs == nil {
			continue // a logger without new records
		}
		runs[len(items)], reports[len(items)] = jr, reports[i]
		items, seqs = append(items, u), append(seqs, seq)
	}
	if len(items) == 0 {
		return
	}
	matched, err := r.exec.JobProgress(ctx, &driver.JobProgressParams{Jobs: items})
	if err != nil {
		if ctx.Err() == nil {
			r.cfg.Logger.Warn("sluice: writing the progress of running jobs failed", "error", err)
		}
		return
	}
	now := r.cfg.now()
	for i, u := range items {
		jr := runs[i]
		if u.Logs != nil {
			jr.log.Load().wrote(seqs[i])
		}
		if u.KeepProgress {
			continue
		}
		jr.progressWritten = reports[i]
		if matched[i] {
			row := *jr.row
			row.Progress = reports[i]
			r.events.emit(EventProgressed, &row, now.Sub(row.AttemptedAt))
		}
	}
}

// presenceExpiry is how long after a client was last seen its record is
// deleted by the other clients: it is gone.
const presenceExpiry = 10 * time.Minute

// presence returns the record of the run's client, seen now.
func (r *run) presence() *driver.ClientRow {
	host, _ := os.Hostname()
	row := &driver.ClientRow{ID: r.lockedBy, Host: host, PID: os.Getpid(), Topics: r.topics,
		StartedAt: r.cfg.now(), MaxWorkers: make(map[string]int)}
	for name, q := range r.cfg.Queues {
		if q.MaxWorkers > 0 {
			row.Queues = append(row.Queues, name)
			row.MaxWorkers[name] = q.MaxWorkers
		}
	}
	slices.Sort(row.Queues)
	return row
}

// record stores row, seen now, and prunes the records of clients gone.
func (r *run) record(ctx context.Context, row *driver.ClientRow) {
	now := r.cfg.now()
	row.SeenAt = now
	err := r.exec.ClientRecord(ctx, &driver.ClientRecordParams{Client: *row, PruneBefore: now.Add(-presenceExpiry)})
	if err != nil && ctx.Err() == nil {
		r.cfg.Logger.Warn("sluice: recording this client failed", "error", err)
	}
}

// present refreshes row every HeartbeatInterval until ctx ends, and then
// deletes it. Start records it first, before any job is claimed.
func (r *run) present(ctx context.Context, row *driver.ClientRow) {
	tick.Every(ctx, r.cfg.HeartbeatInterval, func() { r.record(ctx, row) })
	forget, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := r.exec.ClientForget(forget, &driver.ClientForgetParams{ID: row.ID}); err != nil {
		r.cfg.Logger.Warn("sluice: deleting this client's record failed", "error", err)
	}
}

// cleanBatch is the most jobs the cleaner deletes in one statement, so that
// it never holds many row locks, or SQLite's write lock, for long.
const cleanBatch = 500

// clean deletes expired jobs every Retention.Interval until ctx ends, by
// status, one clean per retention that applies (see Retention.cleanFor).
func (r *run) clean(ctx context.Context) {
	ret := r.cfg.Retention
	var cleans []retentionClean
	for _, status := range []JobStatus{StatusCompleted, StatusFailed, StatusCancelled} {
		for _, c := range ret.cleanFor(status) {
			c.params.Status = status
			cleans = append(cleans, c)
		}
	}
	tick.Every(ctx, ret.Interval, func() {
		r.cleanMetrics(ctx)
		for _, c := range cleans {
			p := c.params
			p.Before = r.cfg.now().Add(-c.keep)
			if _, err := r.cleanStatus(ctx, &p); err != nil && ctx.Err() == nil {
				r.cfg.Logger.Warn("sluice: deleting expired jobs failed", "status", p.Status, "error", err)
			}
		}
		// Workflows and batches go once retention deleted all their jobs.
		if _, err := r.exec.GroupClean(ctx, &driver.GroupCleanParams{Before: r.cfg.now(), Limit: cleanBatch}); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Warn("sluice: deleting finished workflows and batches failed", "error", err)
		}
	})
}

// cleanStatus deletes, batch by batch, the jobs p selects, and returns
// how many.
func (r *run) cleanStatus(ctx context.Context, p *driver.JobCleanParams) (int, error) {
	total := 0
	p.Limit = cleanBatch
	for ctx.Err() == nil {
		n, err := r.exec.JobClean(ctx, p)
		if err != nil {
			return total, fmt.Errorf("clean %s jobs: %w", p.Status, err)
		}
		total += n
		if n < cleanBatch {
			break
		}
	}
	return total, nil
}
