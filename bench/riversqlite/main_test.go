package main

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/bench/harness"
)

// TestRiverSQLite runs every measurement, tiny, against real SQLite files.
func TestRiverSQLite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var n atomic.Int64
	fresh := func(spec *harness.Spec) (func(), error) {
		spec.DB = filepath.Join(dir, fmt.Sprintf("%d.db", n.Add(1)))
		return func() {}, nil
	}
	factories := map[string]harness.Factory{"river/sqlite": newRiverSQLite}
	if err := harness.Exercise(t.Context(), factories, harness.Spec{System: "river", Driver: "sqlite"}, fresh); err != nil {
		t.Fatal(err)
	}
}
