package main

import (
	"testing"

	"github.com/sluicehq/sluice/bench/internal/childtest"
)

// TestSystem runs every measurement, tiny, against real databases: each
// burn-down drains its backlog whole, and latency says it is unsupported.
func TestSystem(t *testing.T) {
	t.Parallel()
	childtest.Exercise(t, factories)
}
