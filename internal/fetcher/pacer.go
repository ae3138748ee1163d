package fetcher

import (
	"slices"
	"time"
)

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

// maxWakes bounds the wake-up times a fetcher remembers; beyond it the
// latest are dropped and found by polling.
const maxWakes = 256

// pacer decides when the claim loop claims and for how many jobs. It is
// the loop's state without its I/O: its methods take the events the loop
// sees (a wake-up, a timer firing, a claim's result) and the time they were
// seen, and say what to do next. A freed slot needs no method of its own:
// the loop asks next again with the new count. The pacer starts no
// goroutines and reads no clock, so tests drive it step by step.
//
// The loop owns two timers: the poll timer, which it resets to the time
// [pacer.claimed] and [pacer.wakeAt] return, and the gather timer, which it
// resets to the time of a [startGather] decision.
type pacer struct {
	slots int           // the queue's worker slots
	poll  time.Duration // the poll interval

	due  bool // a claim is wanted as soon as a slot is free
	step int  // the next step of burst; len(burst) when no burst runs
	// hot is true when the last claim was full, so more jobs likely wait.
	hot bool
	// gathering is true while a hot loop waits for its other slots to free.
	gathering bool
	limit     int // the limit of the claim under way

	// deadline is when the poll timer fires; wakes are the times callers
	// asked to be woken at, earliest first. A reschedule never postpones
	// past the first.
	deadline time.Time
	wakes    []time.Time
}

// newPacer returns the pacer of a queue with the given worker slots, polled
// every poll. It wants a claim at once.
func newPacer(slots int, poll time.Duration) *pacer {
	return &pacer{slots: slots, poll: poll, due: true, step: len(burst)}
}

// action is what a decision tells the loop to do.
type action int

const (
	// idle: wait for the next event (a slot freed, a wake-up, a timer).
	idle action = iota
	// claimNow: claim up to decision.limit jobs, then report to claimed.
	claimNow
	// startGather: reset the gather timer to fire at decision.at, then wait
	// for the next event.
	startGather
)

// decision is what the loop does next.
type decision struct {
	action action
	limit  int       // claimNow: the most jobs to claim
	at     time.Time // startGather: when gathering ends
}

// next says what to do at now with free worker slots: claim if a claim is
// due and a slot is free, unless the last claim was full and not all slots
// are free yet; then it gathers, waiting up to coalesce for the other slots.
func (p *pacer) next(now time.Time, free int) decision {
	if !p.due || free <= 0 {
		return decision{action: idle}
	}
	if p.hot && free < p.slots {
		if p.gathering {
			return decision{action: idle}
		}
		p.gathering = true
		return decision{action: startGather, at: now.Add(coalesce)}
	}
	p.gathering = false
	p.limit = free
	return decision{action: claimNow, limit: free}
}

// claimed records the result of the claim next asked for, made at now:
// n jobs claimed, or err. It returns when the poll timer is to fire. A full
// claim keeps a claim due (the loop is hot); a claim that found jobs ends a
// burst; one that found none takes the burst's next step, or waits for the
// poll; one that failed is retried within a second.
func (p *pacer) claimed(now time.Time, n int, err error) time.Time {
	p.hot = err == nil && n == p.limit
	p.due = p.hot
	switch {
	case err != nil:
		return p.schedule(now.Add(min(p.poll, time.Second)))
	case n > 0:
		p.step = len(burst)
		return p.schedule(now.Add(p.poll))
	case p.step < len(burst):
		at := now.Add(burst[p.step])
		p.step++
		return p.schedule(at)
	default:
		return p.schedule(now.Add(p.poll))
	}
}

// schedule sets the poll timer's deadline to at, or to the first wake-up
// time if that is earlier, and returns it.
func (p *pacer) schedule(at time.Time) time.Time {
	if len(p.wakes) > 0 && p.wakes[0].Before(at) {
		at = p.wakes[0]
	}
	p.deadline = at
	return at
}

// woken records a wake-up: a claim is due. committed is false when the new
// jobs may belong to a transaction that has not committed yet; the burst of
// quick re-polls then starts over.
func (p *pacer) woken(committed bool) {
	p.due = true
	if !committed {
		p.step = 0
	}
}

// wakeAt records a request to claim at at, when a delayed job becomes due.
// If at comes before the poll timer's deadline, it returns at as the new
// deadline and true.
func (p *pacer) wakeAt(at time.Time) (time.Time, bool) {
	p.wakes = addWake(p.wakes, at)
	if !at.Before(p.deadline) {
		return time.Time{}, false
	}
	return p.schedule(at), true
}

// polled records the poll timer firing at now: a claim is due, and the
// wake-up times that have passed are forgotten.
func (p *pacer) polled(now time.Time) {
	p.due = true
	for len(p.wakes) > 0 && !p.wakes[0].After(now) {
		p.wakes = p.wakes[1:]
	}
}

// gathered records the gather timer firing: a gathering loop stops waiting
// for its other slots and claims for those free. A timer left over from a
// gathering that ended with a claim changes nothing.
func (p *pacer) gathered() {
	if p.gathering {
		p.gathering, p.hot = false, false
	}
}

// addWake inserts at into wakes, kept sorted and at most maxWakes long.
func addWake(wakes []time.Time, at time.Time) []time.Time {
	i, _ := slices.BinarySearchFunc(wakes, at, time.Time.Compare)
	wakes = slices.Insert(wakes, i, at)
	if len(wakes) > maxWakes {
		wakes = wakes[:maxWakes]
	}
	return wakes
}
