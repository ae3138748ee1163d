// Package childtest runs every measurement, tiny, for a child program's
// system against real databases: SQLite files and the Postgres server the
// tests are given. Each child program's tests use it.
package childtest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/internal/testkit/dbtest"
)

// Exercise runs harness.Exercise for each of factories' systems, each on
// fresh databases of its driver: SQLite files in a temporary directory, or
// schemas of the Postgres test database.
func Exercise(t *testing.T, factories map[string]harness.Factory) {
	t.Helper()
	for key := range factories {
		system, driver, _ := strings.Cut(key, "/")
		t.Run(key, func(t *testing.T) {
			var fresh func(*harness.Spec) (func(), error)
			switch driver {
			case "sqlite":
				dir := t.TempDir()
				var n atomic.Int64
				fresh = func(spec *harness.Spec) (func(), error) {
					spec.DB = filepath.Join(dir, fmt.Sprintf("%d.db", n.Add(1)))
					return func() {}, nil
				}
			case "pg":
				url := dbtest.URL(t)
				fresh = func(spec *harness.Spec) (func(), error) {
					spec.DB, spec.Schema = url, dbtest.Schema(t, url)
					return func() {}, nil
				}
			default:
				t.Fatalf("unknown driver %q", driver)
			}
			err := harness.Exercise(t.Context(), factories, harness.Spec{System: system, Driver: driver}, fresh)
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Work enqueues jobs in one batch through the system factory makes on a
// fresh database of driver, works them with its throughput settings, stops
// and closes it, and returns the Spec naming that database (DB and, on
// Postgres, Schema) for the test to read what the system left there. It
// fails the test unless every job was worked within 10 s.
func Work(t *testing.T, factory harness.Factory, driver string, jobs int) *harness.Spec {
	t.Helper()
	ctx := t.Context()
	spec := &harness.Spec{Driver: driver}
	switch driver {
	case "sqlite":
		spec.DB = filepath.Join(t.TempDir(), "jobs.db")
	case "pg":
		spec.DB = dbtest.URL(t)
		spec.Schema = dbtest.Schema(t, spec.DB)
	default:
		t.Fatalf("unknown driver %q", driver)
	}
	sys, err := factory(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	var worked atomic.Int64
	all := make(chan struct{})
	err = sys.Migrate(ctx)
	if err == nil {
		err = sys.Open(ctx, true, func(int64) {
			if worked.Add(1) == int64(jobs) {
				close(all)
			}
		})
	}
	if err == nil {
		err = sys.EnqueueMany(ctx, 0, jobs)
	}
	if err == nil {
		err = sys.Start(ctx)
	}
	if err == nil {
		select {
		case <-all:
		case <-time.After(10 * time.Second):
			err = fmt.Errorf("%d of %d jobs worked in 10 s", worked.Load(), jobs)
		}
		err = errors.Join(err, sys.Stop(context.Background()))
	}
	// Close shuts down what the system set up, such as OpenTelemetry's
	// providers, which export the spans still batched.
	if err = errors.Join(err, sys.Close()); err != nil {
		t.Fatal(err)
	}
	return spec
}
