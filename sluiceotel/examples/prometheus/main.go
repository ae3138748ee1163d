// Command prometheus serves the sluice dashboard and, beside it, the
// queue's metrics for Prometheus at /metrics, through OpenTelemetry's
// Prometheus exporter:
//
//	go run ./examples/prometheus                  # http://127.0.0.1:8080/ and /metrics
//	go run ./examples/prometheus -db jobs.db -addr :9090
//
// A scrape config for it:
//
//	scrape_configs:
//	  - job_name: sluice
//	    static_configs: [{targets: ["127.0.0.1:8080"]}]
//
// It works a demo job now and then, so the counters move, and stops on
// Ctrl-C (SIGINT) or SIGTERM.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/sluiceotel"
	"github.com/sluicehq/sluice/sluiceweb"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to serve the dashboard and /metrics on")
	dbPath := flag.String("db", "", "SQLite file of the jobs (default: a new file, removed at exit)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *dbPath); err != nil {
		log.Fatal(err)
	}
}

// PingArgs are the demo job's arguments.
type PingArgs struct {
	N int `json:"n"`
}

// Topic implements sluice.JobArgs.
func (PingArgs) Topic() string { return "ping" }

// server is the program's client and what it serves.
type server struct {
	client  *sluice.Client[*sql.Tx]
	handler http.Handler
	close   func()
}

func run(ctx context.Context, addr, dbPath string) error {
	if dbPath == "" {
		dir, err := os.MkdirTemp("", "sluice-prometheus-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		dbPath = filepath.Join(dir, "jobs.db")
	}
	db, err := sqlitedriver.Open(dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	s, err := newServer(sqlitedriver.New(db))
	if err != nil {
		return err
	}
	defer s.close()
	if err := s.client.Start(ctx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Printf("sluice dashboard: http://%s/, metrics: http://%s/metrics (Ctrl-C stops)\n", ln.Addr(), ln.Addr())
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			err = nil
		case err = <-served:
		case <-tick.C:
			if _, err := s.client.Enqueue(ctx, PingArgs{N: n}, nil); err != nil {
				log.Print(err)
			}
			continue
		}
		break
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if serr := srv.Shutdown(shutdown); err == nil || errors.Is(err, http.ErrServerClosed) {
		err = serr
	}
	return errors.Join(err, s.client.Stop(shutdown))
}

// newServer returns a client over d, measured by sluiceotel into a
// Prometheus registry of its own, and a handler serving the dashboard at
// / and the registry at /metrics.
func newServer(d *sqlitedriver.Driver) (*server, error) {
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry))
	if err != nil {
		return nil, err
	}
	mw, err := sluiceotel.New(sluiceotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))))
	if err != nil {
		return nil, err
	}
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[PingArgs]) error {
		return nil
	}))
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	client, err := sluice.NewClient(d, &sluice.Config{
		Workers:           workers,
		Logger:            logger,
		EnqueueMiddleware: []sluice.EnqueueMiddleware{mw},
		WorkMiddleware:    []sluice.WorkMiddleware{mw},
	})
	if err != nil {
		return nil, err
	}
	reg, err := mw.ObserveQueues(client)
	if err != nil {
		return nil, err
	}
	dash, err := sluiceweb.New(client, &sluiceweb.Options{Authorize: sluiceweb.AllowAll, Logger: logger})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	mux.Handle("/", dash)
	return &server{client: client, handler: mux, close: func() {
		dash.Close()
		_ = reg.Unregister()
	}}, nil
}
