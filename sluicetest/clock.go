package sluicetest

import (
	"sync"
	"time"
)

// Clock is a clock that stands still until the test moves it: give its Now
// to sluice.Config.Clock, and the client stores and compares every time by
// it, so that a job delayed by an hour, or a retry due in a minute, runs as
// soon as the test advances the clock past it (see Work and
// sluice.Client.WorkNext). A Clock is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock that reads start, or the current time (to the
// microsecond, in UTC) when start is zero.
func NewClock(start time.Time) *Clock {
	if start.IsZero() {
		start = time.Now().UTC().Truncate(time.Microsecond)
	}
	return &Clock{now: start}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d (back, if d is negative) and
// returns the new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// Set sets the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
