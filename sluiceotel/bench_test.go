package sluiceotel_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/pgxdriver"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/internal/testkit/clientbench"
	"github.com/sluicehq/sluice/sluiceotel"
)

// burnDownCases are the variants of a burn-down each benchmark below runs:
// plain, with tracing and metrics on (every span sampled and exported in
// batches to an exporter that drops them, metrics recorded), with tracing
// and one log line per job, and the floor of that: the same SDK calls and
// log line made by a middleware of a few lines (floorMiddleware), with
// nothing carried between processes and nothing kept with the job. Run
// them in one program, alternating (-count), to compare.
var burnDownCases = []struct {
	name                   string
	traced, logLine, floor bool
}{
	{"Plain", false, false, false},
	{"Traced", true, false, false},
	{"TracedLogging", true, true, false},
	{"Floor", false, false, true},
}

// BenchmarkWorkBacklog works a backlog of 100k no-op jobs on SQLite with
// the default Config, in each of burnDownCases. The backlog is enqueued
// through the same Config, so traced jobs carry their trace context.
func BenchmarkWorkBacklog(b *testing.B) {
	for _, c := range burnDownCases {
		b.Run(c.name, func(b *testing.B) { burnDown(b, c.traced, c.logLine, c.floor, sqliteDriver) })
	}
}

// BenchmarkClientWorkBacklog is BenchmarkWorkBacklog on the Postgres
// server named by SLUICE_TEST_DATABASE_URL.
func BenchmarkClientWorkBacklog(b *testing.B) {
	for _, c := range burnDownCases {
		b.Run(c.name, func(b *testing.B) { burnDown(b, c.traced, c.logLine, c.floor, pgDriver) })
	}
}

// burnDown works a backlog of 100k jobs on drivers open makes, traced or
// not, logging one line per job or not, or with floorMiddleware.
func burnDown[TTx any](b *testing.B, traced, logLine, floor bool, open func(*testing.B) driver.Driver[TTx]) {
	n := clientbench.Size(100_000)
	for b.Loop() {
		b.StopTimer()
		configure := func(*sluice.Config) {}
		if traced {
			mw, _ := tracedMiddleware(b)
			configure = func(cfg *sluice.Config) {
				cfg.EnqueueMiddleware = []sluice.EnqueueMiddleware{mw}
				cfg.WorkMiddleware = []sluice.WorkMiddleware{mw}
			}
		}
		if floor {
			mw := floorMiddleware(b)
			configure = func(cfg *sluice.Config) { cfg.WorkMiddleware = []sluice.WorkMiddleware{mw} }
		}
		d := open(b)
		backlog(b, d, n, configure)
		b.StartTimer()
		clientbench.BurnDownWith(b, d, n, clientbench.BurnDownOptions{LogLine: logLine, Configure: configure})
	}
}

// tracedMiddleware returns a Middleware that samples every span and
// exports them in batches to an exporter that drops them, and records its
// metrics for a manual reader; and its TracerProvider.
func tracedMiddleware(b *testing.B) (*sluiceotel.Middleware, *sdktrace.TracerProvider) {
	b.Helper()
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	mw, err := sluiceotel.New(sluiceotel.WithTracerProvider(tp), sluiceotel.WithMeterProvider(mp))
	if err != nil {
		b.Fatal(err)
	}
	return mw, tp
}

// floorMiddleware returns work middleware that makes, for each job, the
// OpenTelemetry SDK calls Middleware makes (a consumer span with the same
// attributes, sampled and exported in batches to an exporter that drops
// them; the lag and duration histograms and the completed counter) and
// writes one log line with the job's attributes to a text handler writing
// to io.Discard, as TracedLogging's Config.Logger. It reads no trace
// context from the job and keeps nothing with it: what tracing every job
// and logging a line cost before sluice does anything for them.
func floorMiddleware(b *testing.B) sluice.WorkMiddleware {
	b.Helper()
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tracer, meter := tp.Tracer("floor"), mp.Meter("floor")
	lag, err1 := meter.Float64Histogram("lag")
	duration, err2 := meter.Float64Histogram("duration")
	completed, err3 := meter.Int64Counter("completed")
	if err := errors.Join(err1, err2, err3); err != nil {
		b.Fatal(err)
	}
	set := metric.WithAttributeSet(attribute.NewSet(attribute.String("sluice.topic", "bench"),
		attribute.String("sluice.queue", sluice.QueueDefault)))
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	return sluice.WorkMiddlewareFunc(func(ctx context.Context, job *sluice.JobRow, next func(context.Context) error) error {
		ctx, span := tracer.Start(ctx, "sluice.work "+job.Topic, trace.WithSpanKind(trace.SpanKindConsumer),
			trace.WithAttributes(attribute.String("sluice.topic", job.Topic), attribute.String("sluice.queue", job.Queue),
				attribute.String("messaging.system", "sluice"), attribute.String("messaging.operation.type", "process"),
				attribute.String("messaging.message.id", job.ID), attribute.Int("sluice.attempt", job.Attempt)))
		defer span.End()
		lag.Record(ctx, job.AttemptedAt.Sub(job.RunAt).Seconds(), set)
		start := time.Now()
		err := next(ctx)
		duration.Record(ctx, time.Since(start).Seconds(), set)
		completed.Add(ctx, 1, set)
		logger.InfoContext(ctx, "worked", "job_id", job.ID, "topic", job.Topic, "attempt", job.Attempt)
		return err
	})
}

// sqliteDriver returns a driver over a fresh SQLite file.
func sqliteDriver(b *testing.B) driver.Driver[*sql.Tx] {
	b.Helper()
	db, err := sqlitedriver.Open(filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	return sqlitedriver.New(db)
}

// pgDriver returns a driver over a fresh schema, dropped at the end, of
// the Postgres server named by SLUICE_TEST_DATABASE_URL, with a pool of 20
// connections. (internal/testkit/dbtest would bring its container
// dependencies into this module.)
func pgDriver(b *testing.B) driver.Driver[pgx.Tx] {
	b.Helper()
	url := os.Getenv("SLUICE_TEST_DATABASE_URL")
	if url == "" {
		b.Skip("SLUICE_TEST_DATABASE_URL names no Postgres server")
	}
	ctx := context.Background()
	schema := fmt.Sprintf("sluice_bench_%d", time.Now().UnixNano())
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.MaxConns = 20
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = pool.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE") })
	return pgxdriver.New(pool, pgxdriver.WithSchema(schema))
}

// backlog migrates d and enqueues n pending jobs in batches of 1,000
// through a client with the Config configure makes.
func backlog[TTx any](b *testing.B, d driver.Driver[TTx], n int, configure func(*sluice.Config)) {
	b.Helper()
	if err := d.Migrate(context.Background()); err != nil {
		b.Fatal(err)
	}
	cfg := &sluice.Config{}
	configure(cfg)
	c, err := sluice.NewClient(d, cfg)
	if err != nil {
		b.Fatal(err)
	}
	params := make([]sluice.EnqueueParams, 1000)
	for i := 0; i < n; i += len(params) {
		for k := range params {
			params[k] = sluice.EnqueueParams{Args: clientbench.Args{N: i + k}}
		}
		if _, err := c.EnqueueMany(context.Background(), params[:min(len(params), n-i)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWork measures Middleware.Work alone, around a worker that does
// nothing, without a database: reading the job's trace context from its
// metadata, the work span (sampled, exported in batches to an exporter
// that drops them) and the job's metrics. What it reports is what the
// middleware adds to every job, SDK included.
func BenchmarkWork(b *testing.B) {
	mw, tp := tracedMiddleware(b)
	ctx, parent := tp.Tracer("bench").Start(context.Background(), "request")
	parent.End()
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	meta, err := json.Marshal(carrier)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	job := &sluice.JobRow{ID: "0190f1d2-8c3a-7b4e-9f00-0123456789ab", Topic: "bench", Queue: sluice.QueueDefault,
		Attempt: 1, Metadata: meta, RunAt: now, AttemptedAt: now}
	next := func(context.Context) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		if err := mw.Work(context.Background(), job, next); err != nil {
			b.Fatal(err)
		}
	}
}
