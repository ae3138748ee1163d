package sluice

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/tick"
)

// Defaults of Retention, from the original design.
const (
	// DefaultKeepCompleted is how long completed jobs are kept.
	DefaultKeepCompleted = 24 * time.Hour
	// DefaultKeepFailed is how long failed and cancelled jobs are kept.
	DefaultKeepFailed = 7 * 24 * time.Hour
	// DefaultCleanInterval is how often a started client deletes expired
	// jobs.
	DefaultCleanInterval = time.Minute
)

// KeepForever, as a Retention field, keeps jobs of that status for good.
const KeepForever time.Duration = -1

// cleanBatch is the most jobs the cleaner deletes in one statement, so that
// it never holds many row locks, or SQLite's write lock, for long.
const cleanBatch = 500

// Retention is how long finished jobs are kept, counted from when they
// finished, before a started client deletes them. A zero field means its
// default; KeepForever keeps jobs of that status for good. Every started
// client cleans, and any number may run at once: each deletes different
// jobs, in small batches.
type Retention struct {
	// Completed is how long completed jobs are kept. Default 24 hours.
	Completed time.Duration
	// Failed is how long failed jobs (the dead letter) are kept. Default
	// 7 days.
	Failed time.Duration
	// Cancelled is how long cancelled jobs are kept. Default 7 days.
	Cancelled time.Duration
	// Interval is how often the client deletes expired jobs (at least
	// 1 ms). Default 1 minute.
	Interval time.Duration
}

// fill validates r and fills in its defaults.
func (r *Retention) fill() error {
	keeps := []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"Completed", &r.Completed, DefaultKeepCompleted},
		{"Failed", &r.Failed, DefaultKeepFailed},
		{"Cancelled", &r.Cancelled, DefaultKeepFailed},
	}
	for _, k := range keeps {
		if *k.v < 0 && *k.v != KeepForever {
			return &ConfigError{Field: "Retention." + k.name, Reason: "must not be negative, but for KeepForever"}
		}
		*k.v = orDefault(*k.v, k.def)
	}
	if r.Interval < 0 || r.Interval > 0 && r.Interval < time.Millisecond {
		return &ConfigError{Field: "Retention.Interval", Reason: "must be at least 1ms"}
	}
	r.Interval = orDefault(r.Interval, DefaultCleanInterval)
	return nil
}

// clean deletes expired jobs every Retention.Interval until ctx ends.
func (c *Client[TTx]) clean(ctx context.Context) {
	r := c.cfg.Retention
	keeps := map[JobStatus]time.Duration{
		StatusCompleted: r.Completed, StatusFailed: r.Failed, StatusCancelled: r.Cancelled,
	}
	tick.Every(ctx, r.Interval, func() {
		for status, keep := range keeps {
			if keep == KeepForever {
				continue
			}
			if _, err := c.cleanStatus(ctx, status, c.now().Add(-keep)); err != nil && ctx.Err() == nil {
				c.cfg.Logger.Warn("sluice: deleting expired jobs failed", "status", status, "error", err)
			}
		}
	})
}

// cleanStatus deletes, batch by batch, the jobs of status that finished
// before before, and returns how many.
func (c *Client[TTx]) cleanStatus(ctx context.Context, status JobStatus, before time.Time) (int, error) {
	total := 0
	for ctx.Err() == nil {
		n, err := c.exec.JobClean(ctx, &driver.JobCleanParams{Status: status, Before: before, Limit: cleanBatch})
		if err != nil {
			return total, fmt.Errorf("clean %s jobs: %w", status, err)
		}
		total += n
		if n < cleanBatch {
			break
		}
	}
	return total, nil
}
