package sluice_test

import (
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

func TestSquareRetryPolicy(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 8, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		unit    time.Duration
		attempt int
		want    time.Duration
	}{
		{0, 1, time.Minute},
		{0, 2, 4 * time.Minute},
		{0, 3, 9 * time.Minute},
		{time.Second, 4, 16 * time.Second},
		{0, 0, time.Minute},
	}
	for _, tt := range tests {
		got := sluice.SquareRetryPolicy{Unit: tt.unit}.NextRetry(&sluice.JobRow{Attempt: tt.attempt}, at)
		require.Equal(t, tt.want, got.Sub(at), "unit %s attempt %d", tt.unit, tt.attempt)
	}
}

func TestExponentialRetryPolicy(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 8, 12, 0, 0, 0, time.UTC)
	noJitter := sluice.ExponentialRetryPolicy{Initial: time.Second, Jitter: -1, Max: 10 * time.Second}
	for attempt, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 5: 10 * time.Second} {
		require.Equal(t, want, noJitter.NextRetry(&sluice.JobRow{Attempt: attempt}, at).Sub(at), "attempt %d", attempt)
	}
	jitter := sluice.ExponentialRetryPolicy{Initial: time.Second}
	seen := map[time.Duration]bool{}
	for range 50 {
		d := jitter.NextRetry(&sluice.JobRow{Attempt: 3}, at).Sub(at)
		require.GreaterOrEqual(t, d, 2*time.Second)
		require.LessOrEqual(t, d, 6*time.Second)
		seen[d] = true
	}
	require.Greater(t, len(seen), 1, "jitter spreads retries")
}

func TestBackOffRetryPolicy(t *testing.T) {
	t.Parallel()
	at := time.Now()
	p := sluice.BackOffRetryPolicy{New: func() backoff.BackOff { return backoff.NewConstantBackOff(3 * time.Second) }}
	require.Equal(t, 3*time.Second, p.NextRetry(&sluice.JobRow{Attempt: 2}, at).Sub(at))
	stop := sluice.BackOffRetryPolicy{New: func() backoff.BackOff { return &backoff.StopBackOff{} }}
	require.Equal(t, time.Duration(0), stop.NextRetry(&sluice.JobRow{Attempt: 1}, at).Sub(at))
}
