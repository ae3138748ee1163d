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
