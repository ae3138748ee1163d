package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/internal/testkit/dbtest"
)

// TestNodeSystems runs every measurement, tiny, for each system on Node,
// through its child program as the comparison runs it, each on a fresh
// schema of the Postgres test database, and checks the figures each
// printed: a burn-down's worked figure must be its whole backlog, and every
// measurement reports its memory itself. It fails, never skips, when npm ci
// has not installed bench/node's packages.
func TestNodeSystems(t *testing.T) {
	t.Parallel()
	r := &runner{limit: 2 * time.Minute, logf: t.Logf}
	if err := r.findNode(filepath.Join("..", "..", nodeDir)); err != nil {
		t.Fatal(err)
	}
	url := dbtest.URL(t)
	// One system after the other: graphile-worker's tuned burn-down opens
	// four pools of its own, and other packages' tests share the server.
	for _, system := range nodeSystems {
		t.Run(system, func(t *testing.T) {
			for _, spec := range harness.ExerciseSpecs(harness.Spec{System: system, Driver: "pg"}) {
				if system == "pg-boss" && spec.Kind == harness.KindBurnDown && !spec.Tuned {
					// pg-boss's default worker takes one job every 2 s:
					// a few are enough to see it drain them all.
					spec.Backlog = 3
				}
				spec.DB, spec.Schema = url, dbtest.Schema(t, url)
				if _, err := r.child(t.Context(), &spec, "prepare"); err != nil {
					t.Fatal(err)
				}
				run, err := r.child(t.Context(), &spec, "measure")
				if err != nil {
					t.Fatal(err)
				}
				if err := harness.CheckFigures(&spec, run.out); err != nil {
					t.Fatalf("%s: %v", spec.Scenario, err)
				}
				m, err := parseFigures(run.out, &spec)
				if err != nil {
					t.Fatal(err)
				}
				if m["rss_mib"] <= 0 {
					t.Errorf("%s: no rss_mib figure in:\n%s", spec.Scenario, run.out)
				}
			}
		})
	}
}
