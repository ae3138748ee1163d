package otelsys

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/bench/internal/sluicesqlite"
	"github.com/sluicehq/sluice/bench/internal/sluicesys"
)

// TestVariantsTraceEveryJob works a few jobs with each variant on a SQLite
// file and reads the spans they exported: one work span per job from both,
// joined to its enqueue's trace by sluice-traced alone.
func TestVariantsTraceEveryJob(t *testing.T) {
	t.Parallel()
	const jobs = 25
	for name, variant := range map[string]func(sluicesys.Setup[*sql.Tx], sdktrace.SpanExporter) (sluicesys.Setup[*sql.Tx], error){
		"traced": traced[*sql.Tx],
		"floor":  floor[*sql.Tx],
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			exporter := keptSpans{tracetest.NewInMemoryExporter()}
			setup, err := sluicesqlite.Setup(ctx, &harness.Spec{DB: filepath.Join(t.TempDir(), "jobs.db")})
			if err != nil {
				t.Fatal(err)
			}
			if setup, err = variant(setup, exporter); err != nil {
				t.Fatal(err)
			}
			sys := sluicesys.New(setup)
			var worked atomic.Int64
			if err := sys.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			if err := sys.Open(ctx, true, func(int64) { worked.Add(1) }); err != nil {
				t.Fatal(err)
			}
			if err := sys.EnqueueMany(ctx, 0, jobs); err != nil {
				t.Fatal(err)
			}
			if err := sys.Start(ctx); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(10 * time.Second); worked.Load() < jobs && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			if err := sys.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := sys.Close(); err != nil { // shuts the providers down: every span exported
				t.Fatal(err)
			}
			var work, enqueue, joined int
			for _, s := range exporter.GetSpans() {
				switch s.Name {
				case "sluice.work bench":
					work++
					if s.Parent.IsValid() {
						joined++
					}
				case "sluice.enqueue": // a batch of jobs
					enqueue++
				}
			}
			want := map[string][3]int{"traced": {jobs, 1, jobs}, "floor": {jobs, 0, 0}}[name]
			if got := [3]int{work, enqueue, joined}; worked.Load() != jobs || got != want {
				t.Errorf("%d jobs worked; work spans, enqueue spans, work spans in an enqueue's trace: %v, want %v",
					worked.Load(), got, want)
			}
		})
	}
}

// keptSpans is an in-memory exporter whose spans outlive its shutdown.
type keptSpans struct{ *tracetest.InMemoryExporter }

// Shutdown keeps the spans, which the in-memory exporter's own drops.
func (keptSpans) Shutdown(context.Context) error { return nil }
