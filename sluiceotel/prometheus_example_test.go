package sluiceotel_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/sluiceotel"
)

type reportArgs struct {
	Customer int `json:"customer"`
}

func (reportArgs) Topic() string { return "report" }

// Prometheus scrapes sluice's metrics through OpenTelemetry's Prometheus
// exporter: a meter provider whose reader is the exporter, a Middleware
// over it, the queues observed, and the registry served at /metrics.
func Example_prometheus() {
	ctx := context.Background()
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry), otelprom.WithoutTargetInfo(),
		otelprom.WithoutScopeInfo())
	if err != nil {
		panic(err)
	}
	mw, err := sluiceotel.New(sluiceotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))))
	if err != nil {
		panic(err)
	}

	dir, _ := os.MkdirTemp("", "sluice")
	defer os.RemoveAll(dir)
	db, err := sqlitedriver.Open(filepath.Join(dir, "jobs.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[reportArgs]) error {
		return nil
	}))
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{
		Workers:           workers,
		Logger:            slog.New(slog.DiscardHandler),
		EnqueueMiddleware: []sluice.EnqueueMiddleware{mw},
		WorkMiddleware:    []sluice.WorkMiddleware{mw},
	})
	if err != nil {
		panic(err)
	}
	reg, err := mw.ObserveQueues(client) // depth, running, oldest pending age
	if err != nil {
		panic(err)
	}
	defer reg.Unregister()
	if err := client.Start(ctx); err != nil {
		panic(err)
	}
	defer client.Stop(ctx)
	res, err := client.Enqueue(ctx, reportArgs{Customer: 42}, nil)
	if err != nil {
		panic(err)
	}
	for job := res.Job; job.Status != sluice.StatusCompleted; time.Sleep(10 * time.Millisecond) {
		if job, err = client.Get(ctx, job.ID); err != nil {
			panic(err)
		}
	}

	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	for _, family := range sluiceFamilies(resp.Body) {
		fmt.Println(family)
	}
	// Output:
	// sluice_job_duration_seconds histogram {sluice_queue,sluice_topic}
	// sluice_job_lag_seconds histogram {sluice_queue,sluice_topic}
	// sluice_jobs_completed_total counter {sluice_queue,sluice_topic}
	// sluice_jobs_enqueued_total counter {sluice_queue,sluice_topic}
	// sluice_queue_depth gauge {sluice_queue,sluice_status}
	// sluice_queue_oldest_pending_age_seconds gauge {sluice_queue}
	// sluice_queue_running gauge {sluice_queue}
}

// sluiceFamilies returns the sluice metric families of a scrape, each
// with its type and the names of its first sample's labels.
func sluiceFamilies(r io.Reader) []string {
	var out []string
	labels := map[string]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if family, ok := strings.CutPrefix(line, "# TYPE "); ok && strings.HasPrefix(family, "sluice_") {
			out = append(out, family)
			continue
		}
		name, rest, ok := strings.Cut(line, "{")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		name = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
		if _, seen := labels[name]; seen {
			continue
		}
		var keys []string
		for _, kv := range strings.Split(rest[:strings.IndexByte(rest, '}')], ",") {
			if k, _, _ := strings.Cut(kv, "="); k != "le" {
				keys = append(keys, k)
			}
		}
		labels[name] = "{" + strings.Join(keys, ",") + "}"
	}
	for i, family := range out {
		name, _, _ := strings.Cut(family, " ")
		out[i] = family + " " + labels[name]
	}
	slices.Sort(out)
	return out
}
