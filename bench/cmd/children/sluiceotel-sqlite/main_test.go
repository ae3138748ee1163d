package main

import (
	"database/sql"
	"encoding/json"
	"io"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/bench/internal/childtest"
)

// TestSystem runs every measurement, tiny, against real databases.
func TestSystem(t *testing.T) {
	t.Parallel()
	childtest.Exercise(t, factories)
}

// TestVariantsDoWhatTheySay burns a small backlog down with each variant
// and reads the jobs back: sluice-traced's carry the trace context of
// their enqueue and keep their log line; sluice-floor's carry nothing and
// keep nothing, as plain sluice's.
func TestVariantsDoWhatTheySay(t *testing.T) {
	t.Parallel()
	const backlog = 40
	for system, want := range map[string]struct{ traced, logged int }{
		"sluice-traced": {backlog, backlog},
		"sluice-floor":  {0, 0},
	} {
		t.Run(system, func(t *testing.T) {
			t.Parallel()
			spec := harness.Spec{
				System: system, Driver: "sqlite", Scenario: "burn_down", Kind: harness.KindBurnDown,
				Tuned: true, Backlog: backlog, Window: time.Minute, DB: filepath.Join(t.TempDir(), "jobs.db"),
			}
			js, err := json.Marshal(spec)
			if err != nil {
				t.Fatal(err)
			}
			for _, phase := range []string{"prepare", "measure"} {
				if err := harness.ChildMain(t.Context(), []string{"-phase", phase, "-spec", string(js)}, io.Discard, factories); err != nil {
					t.Fatal(err)
				}
			}
			db, err := sql.Open("sqlite", spec.DB)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var completed, traced, logged int
			err = db.QueryRowContext(t.Context(), `SELECT count(*),
				count(*) FILTER (WHERE json_extract(metadata, '$.traceparent') LIKE '00-%'),
				count(*) FILTER (WHERE json_array_length(logs, '$.records') = 1)
				FROM sluice_jobs WHERE status = 'completed'`).Scan(&completed, &traced, &logged)
			if err != nil {
				t.Fatal(err)
			}
			if completed != backlog || traced != want.traced || logged != want.logged {
				t.Errorf("%d jobs completed, %d with a trace context, %d with one log record; want %d, %d, %d",
					completed, traced, logged, backlog, want.traced, want.logged)
			}
		})
	}
}
