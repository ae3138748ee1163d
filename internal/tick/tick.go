// Package tick runs a function at a steady interval until a context ends:
// the client's heartbeat, rescuer, presence, revocation checks, progress
// writes and retention cleaning all pace themselves with it.
package tick

import (
	"context"
	"time"
)

// Every calls fn once per interval until ctx ends, first one interval from
// now. Calls never overlap: the ticks that come while fn runs count as one,
// so a slow fn is not called again and again to catch up. Every returns once
// ctx ends, never while fn runs.
func Every(ctx context.Context, interval time.Duration, fn func()) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			fn()
		}
	}
}

// NowAndEvery calls fn at once, then as [Every] does.
func NowAndEvery(ctx context.Context, interval time.Duration, fn func()) {
	fn()
	Every(ctx, interval, fn)
}

// EveryOrKicked calls fn(false) once per interval, as [Every] does, and
// fn(true) soon after each receive from kick: at once when the last call
// ended at least gap ago, else gap after it. Kicks that come while fn runs
// or while the gap lasts count as one. Calls never overlap; it returns once
// ctx ends, never while fn runs.
func EveryOrKicked(ctx context.Context, interval, gap time.Duration, kick <-chan struct{}, fn func(kicked bool)) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	var (
		last  time.Time
		later *time.Timer
		due   <-chan time.Time // set while a kick waits for the gap
	)
	defer func() {
		if later != nil {
			later.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			fn(false)
			last = time.Now()
		case <-kick:
			if due != nil {
				continue // a kick already waits
			}
			if wait := gap - time.Since(last); wait > 0 {
				later = time.NewTimer(wait)
				due = later.C
				continue
			}
			fn(true)
			last = time.Now()
		case <-due:
			due = nil
			fn(true)
			last = time.Now()
		}
	}
}
