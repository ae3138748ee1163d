package otelsys

import (
	"context"
	"database/sql"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sluicehq/sluice/bench/internal/childtest"
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
			exporter := keptSpans{tracetest.NewInMemoryExporter()}
			factory := sluicesys.Factory(sluicesqlite.Setup, func(s sluicesys.Setup[*sql.Tx]) (sluicesys.Setup[*sql.Tx], error) {
				return variant(s, exporter)
			})
			childtest.Work(t, factory, "sqlite", jobs) // its Close shuts the providers down: every span exported
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
			if got := [3]int{work, enqueue, joined}; got != want {
				t.Errorf("work spans, enqueue spans, work spans in an enqueue's trace: %v, want %v", got, want)
			}
		})
	}
}

// keptSpans is an in-memory exporter whose spans outlive its shutdown.
type keptSpans struct{ *tracetest.InMemoryExporter }

// Shutdown keeps the spans, which the in-memory exporter's own drops.
func (keptSpans) Shutdown(context.Context) error { return nil }
