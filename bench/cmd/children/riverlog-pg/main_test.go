package main

import (
	"testing"

	"github.com/sluicehq/sluice/bench/internal/childtest"
)

// TestSystem runs every measurement, tiny, against real databases.
func TestSystem(t *testing.T) {
	t.Parallel()
	childtest.Exercise(t, factories)
}
