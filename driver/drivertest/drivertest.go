// Package drivertest is the conformance suite every sluice driver must pass.
//
// A driver's tests call [Exercise] with a function that sets up a fresh,
// migrated, empty database for one test. The suite checks every rule that
// package driver states, each through the driver's own handle and through a
// caller's transaction.
//
// The suite never runs an operation on the driver's own handle while one of
// its transactions is open, so a driver may be tested over a pool of a single
// connection. It passes every time explicitly and never sleeps to make time
// pass.
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
//
// Subtests are grouped by operation (Insert, Unique, Claim, Finalize,
// Progress, Heartbeat, Rescue, Get, List, Stats, QueueLoad, Changes, Act, Clean,
// Presence, History, Migrate, CancelledContext, Notifier, Observe, Schedule,
// Flow, Text, Keys, Groups).
// A subtest that checks an operation's effect runs twice: once through
// [driver.Driver.Executor] (subtest "Executor") and once through
// [driver.Driver.UnwrapExecutor] on a transaction that is then committed
// (subtest "Tx"); each group also checks that a rollback discards the
// operation's effect.
func Exercise[TTx any](t *testing.T, newSetup func(t *testing.T) *Setup[TTx]) {
	t.Helper()
	groups := []struct {
		name  string
		cases []testCase[TTx]
	}{
		{"Insert", insertCases[TTx]()},
		{"Unique", uniqueCases[TTx]()},
		{"Claim", claimCases[TTx]()},
		{"Finalize", finalizeCases[TTx]()},
		{"Progress", progressCases[TTx]()},
		{"Heartbeat", heartbeatCases[TTx]()},
		{"Rescue", rescueCases[TTx]()},
		{"Get", getCases[TTx]()},
		{"List", listCases[TTx]()},
		{"Stats", statsCases[TTx]()},
		{"QueueLoad", queueLoadCases[TTx]()},
		{"Changes", changesCases[TTx]()},
		{"Act", actCases[TTx]()},
		{"Clean", cleanCases[TTx]()},
		{"Presence", presenceCases[TTx]()},
		{"History", historyCases[TTx]()},
		{"Migrate", migrateCases[TTx]()},
		{"CancelledContext", cancelCases[TTx]()},
		{"Notifier", notifierCases[TTx]()},
		{"Observe", observeCases[TTx]()},
		{"Schedule", scheduleCases[TTx]()},
		{"Flow", flowCases[TTx]()},
		{"Keys", keyCases[TTx]()},
		{"Groups", groupCases[TTx]()},
		{"Text", textCases[TTx]()},
		{"Metrics", metricsCases[TTx]()},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range g.cases {
				runCase(t, newSetup, c)
			}
		})
	}
}

// testCase is one subtest of a group. A twin case runs once per mode;
// any other case runs once, with mode direct.
type testCase[TTx any] struct {
	name string
	twin bool
	fn   func(h *harness[TTx], m mode)
}

// runCase runs c as a parallel subtest of t, each run on its own Setup.
func runCase[TTx any](t *testing.T, newSetup func(t *testing.T) *Setup[TTx], c testCase[TTx]) {
	t.Helper()
	t.Run(c.name, func(t *testing.T) {
		t.Parallel()
		if !c.twin {
			c.fn(newHarness(t, newSetup(t)), direct)
			return
		}
		for _, m := range []mode{direct, viaTx} {
			t.Run(m.name, func(t *testing.T) {
				t.Parallel()
				c.fn(newHarness(t, newSetup(t)), m)
			})
		}
	})
}
