package main

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/bench/internal/childtest"
	"github.com/sluicehq/sluice/bench/internal/riverpg"
)

// TestSystem runs every measurement, tiny, against real databases.
func TestSystem(t *testing.T) {
	t.Parallel()
	childtest.Exercise(t, factories)
}

// TestTracedTracesEveryJob works a few jobs with river-traced's settings
// and reads the spans exported: one insert span for the batch, and one
// work span per job linked to it, the trace context carried in the job.
func TestTracedTracesEveryJob(t *testing.T) {
	t.Parallel()
	const jobs = 25
	exporter := keptSpans{tracetest.NewInMemoryExporter()}
	childtest.Work(t, riverpg.Factory(traced(exporter)), "pg", jobs)
	var inserts []trace.SpanContext
	for _, s := range exporter.GetSpans() {
		if s.Name == "river.insert_many" {
			inserts = append(inserts, s.SpanContext)
		}
	}
	var work, linked int
	for _, s := range exporter.GetSpans() {
		if s.Name != "river.work" {
			continue
		}
		work++
		if len(s.Links) == 1 && len(inserts) == 1 && s.Links[0].SpanContext.SpanID() == inserts[0].SpanID() {
			linked++
		}
	}
	if got := [3]int{len(inserts), work, linked}; got != [3]int{1, jobs, jobs} {
		t.Errorf("insert spans, work spans, work spans linked to the insert: %v, want [1 %d %d]", got, jobs, jobs)
	}
}

// keptSpans is an in-memory exporter whose spans outlive its shutdown.
type keptSpans struct{ *tracetest.InMemoryExporter }

// Shutdown keeps the spans, which the in-memory exporter's own drops.
func (keptSpans) Shutdown(context.Context) error { return nil }
