package fetcher

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The pacer tests play the claim loop: each step is an event the loop sees
// at a time (an offset from base) and what the pacer answers, written as a
// string so that a table reads like a trace.

var base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	ms     = time.Millisecond
	sec    = time.Second
	minute = time.Minute
)

// event is what the loop tells the pacer at now; it returns the pacer's
// answer, or "" for an event the pacer only records.
type event func(p *pacer, now time.Time) string

// step is one event at a time after base, and the answer wanted.
type step struct {
	at   time.Duration
	ev   event
	want string
}

// offset renders t as its offset from base.
func offset(t time.Time) string { return t.Sub(base).String() }

// next asks what to do with free slots: "idle", "claim N" or
// "gather until T".
func next(free int) event {
	return func(p *pacer, now time.Time) string {
		switch d := p.next(now, free); d.action {
		case idle:
			return "idle"
		case claimNow:
			return fmt.Sprintf("claim %d", d.limit)
		case startGather:
			return "gather until " + offset(d.at)
		default:
			return fmt.Sprintf("action %d", d.action)
		}
	}
}

var errClaim = errors.New("claim failed")

// claimed reports a claim's result and renders when the poll timer fires.
func claimed(n int, err error) event {
	return func(p *pacer, now time.Time) string { return "poll at " + offset(p.claimed(now, n, err)) }
}

// woken reports a wake-up.
func woken(committed bool) event {
	return func(p *pacer, _ time.Time) string { p.woken(committed); return "" }
}

// wakeAt asks to be woken at base+at: "poll at T" when the poll timer
// moves, "poll stays" when it does not.
func wakeAt(at time.Duration) event {
	return func(p *pacer, _ time.Time) string {
		if deadline, ok := p.wakeAt(base.Add(at)); ok {
			return "poll at " + offset(deadline)
		}
		return "poll stays"
	}
}

// polled reports the poll timer firing.
func polled() event { return func(p *pacer, now time.Time) string { p.polled(now); return "" } }

// gathered reports the gather timer firing.
func gathered() event { return func(p *pacer, _ time.Time) string { p.gathered(); return "" } }

// wakes renders the wake-up times the pacer remembers.
func wakes() event {
	return func(p *pacer, _ time.Time) string {
		s := make([]string, len(p.wakes))
		for i, w := range p.wakes {
			s[i] = offset(w)
		}
		return "wakes " + strings.Join(s, " ")
	}
}

// emptyPoll is the poll timer firing at at, with all four slots free, and a
// claim that finds nothing; want is when the timer fires next.
func emptyPoll(at time.Duration, want string) []step {
	return []step{
		{at, polled(), ""},
		{at, next(4), "claim 4"},
		{at, claimed(0, nil), want},
	}
}

// idleAfterStart is a first claim at base that finds nothing, and so waits
// for the poll (a minute).
var idleAfterStart = []step{
	{0, next(4), "claim 4"},
	{0, claimed(0, nil), "poll at 1m0s"},
}

// hotAfterStart is a first claim at base that fills all four slots.
var hotAfterStart = []step{
	{0, next(4), "claim 4"},
	{0, claimed(4, nil), "poll at 1m0s"},
}

// burstAfterStart is idleAfterStart, then an uncommitted wake-up at 1s and
// a claim that finds nothing, so the burst of quick re-polls starts.
var burstAfterStart = slices.Concat(idleAfterStart, []step{
	{1 * sec, woken(false), ""},
	{1 * sec, next(4), "claim 4"},
	{1 * sec, claimed(0, nil), "poll at 1.001s"},
})

// pacerTests are the pacer's transitions, each a trace from a new pacer of
// four slots.
var pacerTests = []struct {
	name  string
	poll  time.Duration // a minute when zero
	steps []step
}{
	{name: "claims for every slot at once", steps: []step{
		{0, next(4), "claim 4"},
	}},
	{name: "a claim that is not full waits for the poll timer", steps: []step{
		{0, next(4), "claim 4"},
		{0, claimed(3, nil), "poll at 1m0s"},
		{1 * ms, next(4), "idle"},
		{1 * minute, polled(), ""},
		{1 * minute, next(4), "claim 4"},
	}},
	{name: "a due claim waits for a free slot and takes only the free ones", steps: slices.Concat(idleAfterStart, []step{
		{1 * sec, woken(true), ""},
		{1 * sec, next(0), "idle"},
		{2 * sec, next(1), "claim 1"},
	})},
	{name: "a poll with no slot free claims once one frees", steps: []step{
		{0, next(4), "claim 4"},
		{0, claimed(3, nil), "poll at 1m0s"},
		{1 * minute, polled(), ""},
		{1 * minute, next(0), "idle"},
		{1*minute + 5*ms, next(2), "claim 2"},
	}},
	{name: "a full claim claims again at once when all slots are free", steps: slices.Concat(hotAfterStart, []step{
		{0, next(0), "idle"},
		{5 * ms, next(4), "claim 4"},
	})},
	{name: "a full claim of fewer than all slots is hot too", steps: slices.Concat(hotAfterStart, []step{
		{5 * ms, next(1), "gather until 6ms"},
		{6 * ms, gathered(), ""},
		{6 * ms, next(1), "claim 1"},
		{6 * ms, claimed(1, nil), "poll at 1m0.006s"},
		{7 * ms, next(1), "gather until 8ms"},
	})},
	{name: "a hot loop gathers freed slots and claims once all are free", steps: slices.Concat(hotAfterStart, []step{
		{5 * ms, next(1), "gather until 6ms"},
		{5*ms + 300*time.Microsecond, next(2), "idle"},
		{5*ms + 400*time.Microsecond, woken(true), ""},
		{5*ms + 400*time.Microsecond, next(2), "idle"},
		{5*ms + 800*time.Microsecond, next(4), "claim 4"},
	})},
	{name: "a gathering that times out claims for the slots free", steps: slices.Concat(hotAfterStart, []step{
		{5 * ms, next(1), "gather until 6ms"},
		{5*ms + 500*time.Microsecond, next(3), "idle"},
		{6 * ms, gathered(), ""},
		{6 * ms, next(3), "claim 3"},
		{6 * ms, claimed(2, nil), "poll at 1m0.006s"},
		{7 * ms, next(4), "idle"},
	})},
	{name: "a gather timer left from a gathering that ended in a claim changes nothing", steps: slices.Concat(hotAfterStart, []step{
		{5 * ms, next(1), "gather until 6ms"},
		{5*ms + 500*time.Microsecond, next(4), "claim 4"},
		{5*ms + 500*time.Microsecond, claimed(4, nil), "poll at 1m0.0055s"},
		{6 * ms, gathered(), ""},
		{7 * ms, next(1), "gather until 8ms"},
	})},
	{name: "a claim that is not full ends the hot run", steps: slices.Concat(hotAfterStart, []step{
		{5 * ms, next(4), "claim 4"},
		{5 * ms, claimed(1, nil), "poll at 1m0.005s"},
		{6 * ms, next(4), "idle"},
		{6 * ms, woken(true), ""},
		{6 * ms, next(3), "claim 3"},
	})},
	{name: "a failed claim is retried after a second at most", steps: []step{
		{0, next(4), "claim 4"},
		{0, claimed(0, errClaim), "poll at 1s"},
		{1 * ms, next(4), "idle"},
		{1 * sec, polled(), ""},
		{1 * sec, next(4), "claim 4"},
	}},
	{name: "a failed claim is retried after a poll interval shorter than a second", poll: 100 * ms, steps: []step{
		{0, next(4), "claim 4"},
		{0, claimed(0, errClaim), "poll at 100ms"},
	}},
	{name: "a failed claim ends the hot run", steps: slices.Concat(hotAfterStart, []step{
		{5 * ms, next(4), "claim 4"},
		{5 * ms, claimed(0, errClaim), "poll at 1.005s"},
		{6 * ms, next(1), "idle"},
	})},
	{name: "a committed wake-up claims at once and starts no burst", steps: slices.Concat(idleAfterStart, []step{
		{1 * sec, woken(true), ""},
		{1 * sec, next(4), "claim 4"},
		{1 * sec, claimed(0, nil), "poll at 1m1s"},
	})},
	{name: "an uncommitted wake-up re-polls on the burst schedule, then waits for the poll", steps: slices.Concat(
		burstAfterStart,
		emptyPoll(1001*ms, "poll at 1.003s"),
		emptyPoll(1003*ms, "poll at 1.008s"),
		emptyPoll(1008*ms, "poll at 1.018s"),
		emptyPoll(1018*ms, "poll at 1.043s"),
		emptyPoll(1043*ms, "poll at 1.093s"),
		emptyPoll(1093*ms, "poll at 1.193s"),
		emptyPoll(1193*ms, "poll at 1.443s"),
		emptyPoll(1443*ms, "poll at 1m1.443s"),
	)},
	{name: "a claim that finds jobs ends the burst", steps: slices.Concat(
		burstAfterStart,
		[]step{
			{1001 * ms, polled(), ""},
			{1001 * ms, next(4), "claim 4"},
			{1001 * ms, claimed(2, nil), "poll at 1m1.001s"},
		},
		emptyPoll(1*minute+1001*ms, "poll at 2m1.001s"),
	)},
	{name: "an uncommitted wake-up mid-burst starts the burst over", steps: slices.Concat(
		burstAfterStart,
		emptyPoll(1001*ms, "poll at 1.003s"),
		[]step{
			{1002 * ms, woken(false), ""},
			{1002 * ms, next(4), "claim 4"},
			{1002 * ms, claimed(0, nil), "poll at 1.003s"},
		},
		emptyPoll(1003*ms, "poll at 1.005s"),
	)},
	{name: "a committed wake-up mid-burst leaves the burst where it was", steps: slices.Concat(
		burstAfterStart,
		[]step{
			{1 * sec, woken(true), ""},
			{1 * sec, next(4), "claim 4"},
			{1 * sec, claimed(0, nil), "poll at 1.002s"},
		},
		emptyPoll(1002*ms, "poll at 1.007s"),
	)},
	{name: "a failed claim leaves the burst where it was", steps: slices.Concat(
		burstAfterStart,
		[]step{
			{1001 * ms, polled(), ""},
			{1001 * ms, next(4), "claim 4"},
			{1001 * ms, claimed(0, errClaim), "poll at 2.001s"},
		},
		emptyPoll(2001*ms, "poll at 2.003s"),
	)},
	{name: "a wake-up time before the poll timer moves it, a later one does not", steps: slices.Concat(idleAfterStart, []step{
		{0, wakeAt(10 * sec), "poll at 10s"},
		{0, wakeAt(20 * sec), "poll stays"},
		{0, wakeAt(10 * sec), "poll stays"},
		{0, wakeAt(5 * sec), "poll at 5s"},
		{0, wakes(), "wakes 5s 10s 10s 20s"},
	})},
	{name: "a wake-up time before the first claim is remembered for the claim's schedule", steps: []step{
		{0, wakeAt(10 * sec), "poll stays"},
		{0, next(4), "claim 4"},
		{0, claimed(0, nil), "poll at 10s"},
	}},
	{name: "a claim polls again no later than the earliest wake-up time", steps: slices.Concat(
		idleAfterStart,
		[]step{
			{0, wakeAt(10 * sec), "poll at 10s"},
			{0, wakeAt(20 * sec), "poll stays"},
		},
		emptyPoll(10*sec, "poll at 20s"),
		emptyPoll(20*sec, "poll at 1m20s"),
	)},
	{name: "a wake-up time cuts a burst step short", steps: slices.Concat(
		idleAfterStart,
		[]step{
			{1 * sec, wakeAt(1*sec + 500*time.Microsecond), "poll at 1.0005s"},
			{1 * sec, woken(false), ""},
			{1 * sec, next(4), "claim 4"},
			{1 * sec, claimed(0, nil), "poll at 1.0005s"},
		},
	)},
	{name: "the poll timer forgets the wake-up times that have passed, and only those", steps: slices.Concat(idleAfterStart, []step{
		{0, wakeAt(1 * sec), "poll at 1s"},
		{0, wakeAt(3 * sec), "poll stays"},
		{0, wakeAt(2 * sec), "poll stays"},
		{0, wakeAt(2 * sec), "poll stays"},
		{2 * sec, polled(), ""},
		{2 * sec, wakes(), "wakes 3s"},
	})},
}

func TestPacer(t *testing.T) {
	t.Parallel()
	for _, tt := range pacerTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			poll := tt.poll
			if poll == 0 {
				poll = time.Minute
			}
			p := newPacer(4, poll)
			for i, s := range tt.steps {
				require.Equal(t, s.want, s.ev(p, base.Add(s.at)), "step %d (at %s)", i, s.at)
			}
		})
	}
}

func TestPacerRemembersTheEarliestWakeUpTimesSorted(t *testing.T) {
	t.Parallel()
	p := newPacer(4, time.Minute)
	p.next(base, 4)
	p.claimed(base, 0, nil)
	for s := maxWakes + 44; s > 0; s-- {
		p.wakeAt(base.Add(time.Duration(s) * time.Second))
	}
	require.Len(t, p.wakes, maxWakes)
	require.True(t, slices.IsSortedFunc(p.wakes, time.Time.Compare))
	require.Equal(t, base.Add(time.Second), p.wakes[0])
	require.Equal(t, base.Add(maxWakes*time.Second), p.wakes[maxWakes-1], "the latest are dropped")

	at, ok := p.wakeAt(base.Add(time.Hour))
	require.False(t, ok, "a time past the deadline does not move it")
	require.Zero(t, at)
	require.Equal(t, base.Add(maxWakes*time.Second), p.wakes[maxWakes-1], "nor does it stay")
}
