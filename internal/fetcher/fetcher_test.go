package fetcher

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAddWakeKeepsTheEarliestSorted(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return base.Add(time.Duration(s) * time.Second) }
	var wakes []time.Time
	for _, s := range []int{5, 1, 3, 3, 9} {
		wakes = addWake(wakes, at(s))
	}
	require.Equal(t, []time.Time{at(1), at(3), at(3), at(5), at(9)}, wakes)

	wakes = nil
	for s := maxWakes + 10; s > 0; s-- {
		wakes = addWake(wakes, at(s))
	}
	require.Len(t, wakes, maxWakes)
	require.Equal(t, at(1), wakes[0])
	require.Equal(t, at(maxWakes), wakes[maxWakes-1], "the latest are dropped first")
}
