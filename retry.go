package sluice

import (
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

// NextRetry implements RetryPolicy.
func (p ExponentialRetryPolicy) NextRetry(job *JobRow, failedAt time.Time) time.Time {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = orDefault(p.Initial, time.Second)
	b.Multiplier = p.Multiplier
	if b.Multiplier <= 0 {
		b.Multiplier = 2
	}
	b.RandomizationFactor = p.Jitter
	if p.Jitter == 0 {
		b.RandomizationFactor = 0.5
	} else if p.Jitter < 0 {
		b.RandomizationFactor = 0
	}
	b.MaxInterval = orDefault(p.Max, time.Hour)
	b.MaxElapsedTime = 0
	b.Reset()
	var d time.Duration
	for range max(job.Attempt, 1) {
		d = b.NextBackOff()
	}
	return failedAt.Add(d)
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
