// Package childtest runs every measurement, tiny, for a child program's
// system against real databases: SQLite files and the Postgres server the
// tests are given. Each child program's tests use it.
package childtest

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

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
