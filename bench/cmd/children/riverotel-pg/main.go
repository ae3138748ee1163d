// Command riverotel-pg is River on Postgres with OpenTelemetry on, the
// variant river-traced, for the comparison program: River's own
// OpenTelemetry middleware (rivercontrib's otelriver) on inserts and work,
// with the SDK set up as for sluice-traced, and one log line per job kept
// by riverlog, as river-logged has. It is a program of its own so that
// plain River's links no OpenTelemetry.
package main

import (
	"context"
	"os"

	"github.com/riverqueue/rivercontrib/otelriver"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/bench/internal/otelsdk"
	"github.com/sluicehq/sluice/bench/internal/riverlogs"
	"github.com/sluicehq/sluice/bench/internal/riverpg"
)

var factories = map[string]harness.Factory{"river-traced/pg": riverpg.Factory(traced(nil))}

func main() {
	harness.Exit(harness.ChildMain(context.Background(), os.Args[1:], os.Stdout, factories))
}

// traced returns the change that puts otelriver's middleware on inserts
// and work, every span sampled and exported to exporter (nil: dropped)
// and every metric recorded, outside riverlog's one line per job. Trace
// propagation is on, so each job carries the trace context of its insert
// to its work span, as sluiceotel's jobs do.
func traced(exporter sdktrace.SpanExporter) func(*riverpg.Extras) error {
	return func(e *riverpg.Extras) error {
		tp, mp, shutdown := otelsdk.Providers(exporter)
		e.Release = shutdown
		mw := otelriver.NewMiddleware(&otelriver.MiddlewareConfig{
			TracerProvider: tp, MeterProvider: mp, EnableTracePropagation: true,
		})
		// A plugin, as otelriver's example installs it: middleware on
		// inserts and work, and a hook for River's fetch metrics.
		e.Plugins = append(e.Plugins, mw)
		return riverlogs.Logged(e)
	}
}
