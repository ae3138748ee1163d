// Package otelsys turns on sluice's observability features for the
// variants of sluice the comparison measures against plain sluice:
// sluiceotel's tracing and metrics with one log line per job, and the
// floor of that, the OpenTelemetry SDK's own calls for each job with no
// queue code around them.
package otelsys

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/bench/internal/otelsdk"
	"github.com/sluicehq/sluice/bench/internal/sluicesys"
	"github.com/sluicehq/sluice/sluiceotel"
)

// Traced returns setup with sluiceotel's middleware on enqueues and work
// (every span sampled and exported, every metric recorded) and one log
// line per job, kept with the job.
func Traced[TTx any](setup sluicesys.Setup[TTx]) (sluicesys.Setup[TTx], error) {
	return traced(setup, nil)
}

// traced is Traced exporting spans to exporter (nil: dropped).
func traced[TTx any](setup sluicesys.Setup[TTx], exporter sdktrace.SpanExporter) (sluicesys.Setup[TTx], error) {
	tp, mp, shutdown := otelsdk.Providers(exporter)
	mw, err := sluiceotel.New(sluiceotel.WithTracerProvider(tp), sluiceotel.WithMeterProvider(mp))
	if err != nil {
		shutdown()
		return setup, err
	}
	setup.Configure = append(setup.Configure, func(cfg *sluice.Config) {
		cfg.EnqueueMiddleware = append(cfg.EnqueueMiddleware, mw)
		cfg.WorkMiddleware = append(cfg.WorkMiddleware, mw)
	})
	setup.LogLine = true
	setup.AddRelease(shutdown)
	return setup, nil
}

// Floor returns setup with work middleware of a few lines that makes, for
// each job, the SDK calls sluiceotel's work middleware makes: a consumer
// span with its attributes, sampled and exported as in Traced, and the
// lag and duration histograms and the completed counter. It carries no
// trace context from the enqueue and keeps nothing with the job: what
// tracing every job costs before any queue does anything for it.
func Floor[TTx any](setup sluicesys.Setup[TTx]) (sluicesys.Setup[TTx], error) {
	return floor(setup, nil)
}

// floor is Floor exporting spans to exporter (nil: dropped).
func floor[TTx any](setup sluicesys.Setup[TTx], exporter sdktrace.SpanExporter) (sluicesys.Setup[TTx], error) {
	tp, mp, shutdown := otelsdk.Providers(exporter)
	tracer, meter := tp.Tracer("floor"), mp.Meter("floor")
	lag, err1 := meter.Float64Histogram("lag")
	took, err2 := meter.Float64Histogram("duration")
	done, err3 := meter.Int64Counter("completed")
	if err := errors.Join(err1, err2, err3); err != nil {
		shutdown()
		return setup, err
	}
	set := metric.WithAttributeSet(attribute.NewSet(
		attribute.String("sluice.topic", sluicesys.Args{}.Topic()), attribute.String("sluice.queue", sluice.QueueDefault)))
	mw := sluice.WorkMiddlewareFunc(func(ctx context.Context, job *sluice.JobRow, next func(context.Context) error) error {
		attrs := trace.WithAttributes(
			attribute.String("messaging.system", "sluice"), attribute.String("messaging.operation.type", "process"),
			attribute.String("messaging.message.id", job.ID), attribute.Int("sluice.attempt", job.Attempt),
			attribute.String("sluice.topic", job.Topic), attribute.String("sluice.queue", job.Queue))
		ctx, span := tracer.Start(ctx, "sluice.work "+job.Topic, trace.WithSpanKind(trace.SpanKindConsumer), attrs)
		lag.Record(ctx, job.AttemptedAt.Sub(job.RunAt).Seconds(), set)
		began := time.Now()
		err := next(ctx)
		took.Record(ctx, time.Since(began).Seconds(), set)
		done.Add(ctx, 1, set)
		span.End()
		return err
	})
	setup.Configure = append(setup.Configure, func(cfg *sluice.Config) { cfg.WorkMiddleware = append(cfg.WorkMiddleware, mw) })
	setup.AddRelease(shutdown)
	return setup, nil
}
