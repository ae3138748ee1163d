package sluicepb_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/plugins/jsvm"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/clientbench"
	"github.com/sluicehq/sluice/sluicepb"
)

// BenchmarkJSWorkerBurn works a backlog of jobs whose handler does
// nothing, with a JavaScript worker (JSOptions' default concurrency, 4)
// and with a Go raw worker, alternately, inside PocketBase with the
// default Config (10 workers): what a job costs for running on a goja
// runtime of the pool, rather than in Go.
func BenchmarkJSWorkerBurn(b *testing.B) {
	n := clientbench.Size(10_000)
	var js, goRaw, ratios []float64
	for b.Loop() {
		for range benchReps() {
			j := burnRaw(b, n, true)
			g := burnRaw(b, n, false)
			js, goRaw, ratios = append(js, j), append(goRaw, g), append(ratios, j/g)
		}
	}
	b.ReportMetric(median(js), "js_jobs/s")
	b.ReportMetric(median(goRaw), "go_jobs/s")
	b.ReportMetric(median(ratios), "js/go")
}

// burnRaw works n jobs of topic "bench" in a fresh app, by a JavaScript
// worker or a Go one, and returns jobs/s from the start of the workers to
// the last completion.
func burnRaw(b *testing.B, n int, js bool) float64 {
	b.Helper()
	dir := b.TempDir()
	app := core.NewBaseApp(core.BaseAppConfig{DataDir: filepath.Join(dir, "pb_data")})
	jobs, err := sluicepb.Register(app, nil)
	if err != nil {
		b.Fatal(err)
	}
	if js {
		hooks := filepath.Join(dir, "pb_hooks")
		if err := os.Mkdir(hooks, 0o755); err != nil {
			b.Fatal(err)
		}
		src := `$jobs.work("bench", (job) => {});`
		if err := os.WriteFile(filepath.Join(hooks, "bench.pb.js"), []byte(src), 0o644); err != nil {
			b.Fatal(err)
		}
		if err := jsvm.Register(app, jobs.JSConfig(jsvm.Config{HooksDir: hooks}, nil)); err != nil {
			b.Fatal(err)
		}
	} else {
		err := sluicepb.AddRawWorker(jobs, "bench", sluice.WorkFunc(func(context.Context, *sluice.Job[sluice.RawArgs]) error { return nil }))
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := app.Bootstrap(); err != nil {
		b.Fatal(err)
	}
	defer app.ResetBootstrapState()
	c, err := jobs.Client()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	params := make([]sluice.EnqueueParams, 0, 1000)
	for i := range n {
		params = append(params, sluice.EnqueueParams{Args: sluice.RawArgs{TopicName: "bench", Payload: json.RawMessage(`{"i":` + strconv.Itoa(i) + `}`)}})
		if len(params) == cap(params) || i == n-1 {
			if _, err := c.EnqueueMany(ctx, params); err != nil {
				b.Fatal(err)
			}
			params = params[:0]
		}
	}
	done := c.SubscribeBuffered(n+16, sluice.EventCompleted, sluice.EventFailed)
	defer done.Close()
	start := time.Now()
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer c.Stop(ctx)
	for range n {
		select {
		case ev := <-done.C:
			if ev.Kind != sluice.EventCompleted {
				b.Fatalf("job %s: %s", ev.Job.ID, ev.Kind)
			}
		case <-time.After(time.Minute):
			b.Fatal("the backlog did not burn down within a minute of its last completion")
		}
	}
	return float64(n) / time.Since(start).Seconds()
}
