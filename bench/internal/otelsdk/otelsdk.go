// Package otelsdk sets up the OpenTelemetry SDK the same way for every
// traced variant of the comparison, sluice's and River's alike, so that
// they pay for the same exporting and recording.
package otelsdk

import (
	"context"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Providers returns a TracerProvider that samples every span and exports
// them in batches to an exporter that drops them, or to exporter when it
// is given; a MeterProvider whose reader is never read; and a function
// that shuts both down, exporting the spans still batched.
func Providers(exporter sdktrace.SpanExporter) (*sdktrace.TracerProvider, *sdkmetric.MeterProvider, func()) {
	if exporter == nil {
		exporter = tracetest.NewNoopExporter()
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	return tp, mp, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = tp.Shutdown(ctx)
		_ = mp.Shutdown(ctx)
	}
}
