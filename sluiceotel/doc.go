// Package sluiceotel traces and measures sluice jobs with OpenTelemetry.
//
// It is a Go module of its own, so that an application using sluice
// without OpenTelemetry never has it in its module graph.
//
// A [Middleware] is both a sluice.EnqueueMiddleware and a
// sluice.WorkMiddleware. Set it as both, on every client that enqueues and
// every client that works:
//
//	mw, err := sluiceotel.New() // the global tracer and meter providers
//	cfg := &sluice.Config{
//		EnqueueMiddleware: []sluice.EnqueueMiddleware{mw},
//		WorkMiddleware:    []sluice.WorkMiddleware{mw},
//	}
//
// An enqueue gets a producer span, and each job it enqueues carries the
// span's context in its metadata (the W3C traceparent, under the key
// "traceparent", and tracestate when there is one); the work of a job gets
// a consumer span whose parent is that context, so one trace follows a job
// from the request that enqueued it to the process that worked it. Metrics:
// sluice.jobs.enqueued, sluice.jobs.completed and sluice.jobs.failed
// (counters by topic and queue), sluice.job.duration (how long work took)
// and sluice.job.lag (from when a job was due to when its attempt was
// claimed), in seconds; and, with [Middleware.ObserveQueues],
// sluice.queue.depth (the jobs of each queue by status),
// sluice.queue.running and sluice.queue.oldest_pending_age.
//
// Prometheus scrapes them through OpenTelemetry's Prometheus exporter
// (go.opentelemetry.io/otel/exporters/prometheus), a reader of the meter
// provider given to [WithMeterProvider]: see Example (Prometheus), and
// examples/prometheus, a program serving the dashboard and /metrics side
// by side.
package sluiceotel
