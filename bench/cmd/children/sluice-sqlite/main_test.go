package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/bench/internal/childtest"
)

// TestSystem runs every measurement, tiny, against real databases.
func TestSystem(t *testing.T) {
	t.Parallel()
	childtest.Exercise(t, factories)
}

// TestCPUProfile checks that the measure phase writes its CPU profile
// where harness.CPUProfileEnv says, and the prepare phase none.
func TestCPUProfile(t *testing.T) {
	dir := t.TempDir()
	profile := filepath.Join(dir, "cpu.prof")
	t.Setenv(harness.CPUProfileEnv, profile)
	spec := harness.Spec{System: "sluice", Driver: "sqlite", Scenario: "burn_down", Kind: harness.KindBurnDown,
		Tuned: true, Backlog: 2000, Window: time.Minute, DB: filepath.Join(dir, "jobs.db")}
	js, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := harness.ChildMain(t.Context(), []string{"-phase", "prepare", "-spec", string(js)}, io.Discard, factories); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(profile); !os.IsNotExist(err) {
		t.Fatalf("the prepare phase wrote a profile: %v", err)
	}
	if err := harness.ChildMain(t.Context(), []string{"-phase", "measure", "-spec", string(js)}, io.Discard, factories); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(profile)
	if err != nil || st.Size() == 0 {
		t.Fatalf("no profile of the measure phase: %v", err)
	}
}
