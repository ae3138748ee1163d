package sluice

import (
	"math"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// RetryPolicy decides when a failed job runs again.
type RetryPolicy interface {
	// NextRetry returns when job, whose attempt job.Attempt just failed at
	// failedAt, may run again.
	NextRetry(job *JobRow, failedAt time.Time) time.Time
}

// SquareRetryPolicy waits attempt² × Unit before retry number attempt: with
// the default Unit of a minute, 1, 4 and 9 minutes before the first three
// retries. It is the default policy.
type SquareRetryPolicy struct {
	// Unit is the delay before the first retry; default one minute.
	Unit time.Duration
}

// NextRetry implements RetryPolicy.
func (p SquareRetryPolicy) NextRetry(job *JobRow, failedAt time.Time) time.Time {
	unit := p.Unit
	if unit <= 0 {
		unit = time.Minute
	}
	n := time.Duration(max(job.Attempt, 1))
	if n > math.MaxInt64/n/unit {
		return failedAt.Add(math.MaxInt64) // n²×unit overflows: wait as long as a Duration can
	}
	return failedAt.Add(n * n * unit)
}

// ExponentialRetryPolicy waits exponentially longer before each retry, with
// random jitter so that jobs that failed together do not retry together. It
// is built on backoff.ExponentialBackOff from github.com/cenkalti/backoff/v4.
type ExponentialRetryPolicy struct {
	// Initial is the delay before the first retry, before jitter; default 1 s.
	Initial time.Duration
	// Multiplier grows the delay from one retry to the next; default 2.
	Multiplier float64
	// Jitter is the randomization factor: each delay is drawn from
	// [d×(1-Jitter), d×(1+Jitter)]; default 0.5. Negative means none.
	Jitter float64
	// Max caps the delay before jitter; default 1 hour.
	Max time.Duration
}

// NextRetry implements RetryPolicy. The delay before retry n is
// Initial×Multiplier^(n-1), capped at Max, computed in one step whatever n
// is, then jittered.
func (p ExponentialRetryPolicy) NextRetry(job *JobRow, failedAt time.Time) time.Time {
	initial := orDefault(p.Initial, time.Second)
	multiplier := p.Multiplier
	if multiplier <= 0 {
		multiplier = 2
	}
	maxDelay := orDefault(p.Max, time.Hour)
	interval := initial
	if n := max(job.Attempt, 1); n > 1 {
		f := float64(initial) * math.Pow(multiplier, float64(n-1))
		if f >= float64(maxDelay) || math.IsNaN(f) {
			interval = maxDelay
		} else {
			interval = time.Duration(f)
		}
	}
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = interval
	b.MaxInterval = interval
	b.RandomizationFactor = p.Jitter
	if p.Jitter == 0 {
		b.RandomizationFactor = 0.5
	} else if p.Jitter < 0 {
		b.RandomizationFactor = 0
	}
	b.MaxElapsedTime = 0
	b.Reset()
	return failedAt.Add(b.NextBackOff())
}

// BackOffRetryPolicy adapts any backoff.BackOff to a RetryPolicy: New is
// called once per retry and its NextBackOff advanced once per attempt so
// far. A backoff.Stop result retries at once.
type BackOffRetryPolicy struct {
	// New returns a fresh backoff.
	New func() backoff.BackOff
}

// NextRetry implements RetryPolicy.
func (p BackOffRetryPolicy) NextRetry(job *JobRow, failedAt time.Time) time.Time {
	b := p.New()
	var d time.Duration
	for range max(job.Attempt, 1) {
		d = b.NextBackOff()
	}
	if d == backoff.Stop {
		d = 0
	}
	return failedAt.Add(d)
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
