package sluiceotel_test

import (
	"context"
	"path/filepath"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/internal/testkit/clientbench"
	"github.com/sluicehq/sluice/sluiceotel"
)

// BenchmarkWorkBacklog works a backlog of 100k no-op jobs on SQLite with
// the default Config, plain (Plain) and with tracing and metrics on and
// one log line per job (Traced): every span sampled and exported in
// batches (to an exporter that drops them), metrics recorded. The backlog
// is enqueued through the same Config, so traced jobs carry their trace
// context. Run both in one program, alternating (-count), to compare.
func BenchmarkWorkBacklog(b *testing.B) {
	b.Run("Plain", func(b *testing.B) { burnDown(b, false) })
	b.Run("Traced", func(b *testing.B) { burnDown(b, true) })
}

func burnDown(b *testing.B, traced bool) {
	n := clientbench.Size(100_000)
	for b.Loop() {
		b.StopTimer()
		configure := func(*sluice.Config) {}
		if traced {
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
			b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			mw, err := sluiceotel.New(sluiceotel.WithTracerProvider(tp), sluiceotel.WithMeterProvider(mp))
			if err != nil {
				b.Fatal(err)
			}
			configure = func(cfg *sluice.Config) {
				cfg.EnqueueMiddleware = []sluice.EnqueueMiddleware{mw}
				cfg.WorkMiddleware = []sluice.WorkMiddleware{mw}
			}
		}
		d := backlog(b, n, configure)
		b.StartTimer()
		clientbench.BurnDownWith(b, d, n, clientbench.BurnDownOptions{LogLine: traced, Configure: configure})
	}
}

// backlog returns a driver over a fresh SQLite file holding n pending jobs,
// enqueued in batches of 1,000 through a client with the Config configure
// makes.
func backlog(b *testing.B, n int, configure func(*sluice.Config)) *sqlitedriver.Driver {
	b.Helper()
	db, err := sqlitedriver.Open(filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	d := sqlitedriver.New(db)
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
	return d
}
