package sluiceotel_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/sluiceotel"
)

type mailArgs struct {
	Fail bool `json:"fail"`
}

func (mailArgs) Topic() string { return "mail" }

// setup returns a Middleware over in-memory exporters, and a driver over a
// fresh SQLite file.
func setup(t *testing.T) (*sluiceotel.Middleware, *tracetest.SpanRecorder, *sdkmetric.ManualReader, *sqlitedriver.Driver) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	mw, err := sluiceotel.New(sluiceotel.WithTracerProvider(tp), sluiceotel.WithMeterProvider(mp))
	require.NoError(t, err)
	db, err := sqlitedriver.Open(filepath.Join(t.TempDir(), "jobs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return mw, rec, reader, sqlitedriver.New(db)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestTraceFollowsAJobAcrossClients(t *testing.T) {
	t.Parallel()
	mw, rec, reader, d := setup(t)
	ctx := t.Context()
	// One client enqueues, another works: the trace context travels in
	// the job's metadata only.
	producer, err := sluice.NewClient(d, &sluice.Config{Logger: quiet, EnqueueMiddleware: []sluice.EnqueueMiddleware{mw}})
	require.NoError(t, err)
	done := make(chan struct{}, 2)
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[mailArgs]) error {
		defer func() { done <- struct{}{} }()
		if job.Args.Fail {
			return sluice.Cancel(errors.New("bounced"))
		}
		require.True(t, trace.SpanContextFromContext(ctx).IsValid(), "the worker's context carries its span")
		return nil
	}))
	consumer, err := sluice.NewClient(d, &sluice.Config{Logger: quiet, Workers: workers,
		WorkMiddleware: []sluice.WorkMiddleware{mw}})
	require.NoError(t, err)

	parentCtx, parent := sdktrace.NewTracerProvider().Tracer("test").Start(ctx, "request")
	res, err := producer.Enqueue(parentCtx, mailArgs{}, nil)
	require.NoError(t, err)
	parent.End()
	require.Contains(t, string(res.Job.Metadata), `"traceparent":"00-`+parent.SpanContext().TraceID().String())
	_, err = producer.Enqueue(ctx, mailArgs{Fail: true}, nil)
	require.NoError(t, err)

	require.NoError(t, consumer.Start(ctx))
	<-done
	<-done
	require.NoError(t, consumer.Stop(context.Background()))

	spans := rec.Ended()
	require.Len(t, spans, 4)
	byKind := map[trace.SpanKind][]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byKind[s.SpanKind()] = append(byKind[s.SpanKind()], s)
	}
	require.Len(t, byKind[trace.SpanKindProducer], 2)
	require.Len(t, byKind[trace.SpanKindConsumer], 2)
	enq := byKind[trace.SpanKindProducer][0]
	require.Equal(t, "sluice.enqueue mail", enq.Name())
	require.Equal(t, parent.SpanContext().TraceID(), enq.SpanContext().TraceID())
	for _, work := range byKind[trace.SpanKindConsumer] {
		require.Equal(t, "sluice.work mail", work.Name())
		var from sdktrace.ReadOnlySpan
		for _, p := range byKind[trace.SpanKindProducer] {
			if p.SpanContext().SpanID() == work.Parent().SpanID() {
				from = p
			}
		}
		require.NotNil(t, from, "each work span's parent is the enqueue span of its job")
		require.Equal(t, from.SpanContext().TraceID(), work.SpanContext().TraceID())
		require.True(t, work.Parent().IsRemote())
	}

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(ctx, &rm))
	sums := map[string]int64{}
	counts := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range data.DataPoints {
					sums[m.Name] += p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range data.DataPoints {
					counts[m.Name] += p.Count
				}
			}
		}
	}
	require.Equal(t, map[string]int64{"sluice.jobs.enqueued": 2, "sluice.jobs.completed": 1, "sluice.jobs.failed": 1}, sums)
	require.Equal(t, map[string]uint64{"sluice.job.duration": 2, "sluice.job.lag": 2}, counts)
	var failed sdktrace.ReadOnlySpan
	for _, s := range byKind[trace.SpanKindConsumer] {
		if s.Status().Code == codes.Error {
			failed = s
		}
	}
	require.NotNil(t, failed, "the failed attempt's span records its error")
}

// TestQueueGauges reads the queue gauges of two queues: one whose jobs
// are all due later (age 0), one with a job due for five minutes.
func TestQueueGauges(t *testing.T) {
	t.Parallel()
	mw, _, reader, d := setup(t)
	c, err := sluice.NewClient(d, &sluice.Config{Logger: quiet,
		Queues: map[string]sluice.QueueConfig{"default": {}, "late": {}}})
	require.NoError(t, err)
	for range 3 {
		_, err := c.Enqueue(t.Context(), mailArgs{}, &sluice.EnqueueOptions{RunAt: time.Now().Add(time.Hour)})
		require.NoError(t, err)
	}
	for _, ago := range []time.Duration{time.Minute, 5 * time.Minute} {
		_, err := c.Enqueue(t.Context(), mailArgs{}, &sluice.EnqueueOptions{Queue: "late", RunAt: time.Now().Add(-ago)})
		require.NoError(t, err)
	}
	reg, err := mw.ObserveQueues(c)
	require.NoError(t, err)
	defer func() { require.NoError(t, reg.Unregister()) }()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(t.Context(), &rm))
	depth, running, age := map[string]int64{}, map[string]int64{}, map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch g := m.Data.(type) {
			case metricdata.Gauge[int64]:
				for _, p := range g.DataPoints {
					q, _ := p.Attributes.Value("sluice.queue")
					switch m.Name {
					case "sluice.queue.depth":
						status, _ := p.Attributes.Value("sluice.status")
						depth[q.AsString()+"/"+status.AsString()] += p.Value
					case "sluice.queue.running":
						running[q.AsString()] = p.Value
					}
				}
			case metricdata.Gauge[float64]:
				require.Equal(t, "sluice.queue.oldest_pending_age", m.Name)
				require.Equal(t, "s", m.Unit)
				for _, p := range g.DataPoints {
					q, _ := p.Attributes.Value("sluice.queue")
					age[q.AsString()] = p.Value
				}
			}
		}
	}
	require.Equal(t, map[string]int64{"default/pending": 3, "late/pending": 2}, depth)
	require.Equal(t, map[string]int64{"default": 0, "late": 0}, running)
	require.Zero(t, age["default"], "nothing due")
	require.InDelta(t, 300, age["late"], 60, "due five minutes ago")
}

// TestWorkReadsTraceContextFromMetadata runs Work on jobs whose metadata
// carries trace context among other values, through the default
// propagator and one that reads baggage too: the work span is the child
// of the span the metadata names, whatever else the metadata holds.
func TestWorkReadsTraceContextFromMetadata(t *testing.T) {
	t.Parallel()
	parentCtx, parent := sdktrace.NewTracerProvider().Tracer("test").Start(t.Context(), "request")
	parent.End()
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(parentCtx, carrier)
	tp := `"` + carrier.Get("traceparent") + `"`
	for _, prop := range []propagation.TextMapPropagator{
		propagation.TraceContext{},
		propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	} {
		rec := tracetest.NewSpanRecorder()
		mw, err := sluiceotel.New(sluiceotel.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))),
			sluiceotel.WithPropagator(prop))
		require.NoError(t, err)
		for i, tc := range []struct {
			meta  string
			child bool
		}{
			{`{"traceparent":` + tp + `}`, true},
			{`{"n": 1, "nested": {"traceparent": "00-bad"}, "traceparent": ` + tp + `, "list": [1, "x"], "tracestate": "k=v"}`, true},
			{` { "a" : [ {"traceparent": "x"}, "]}\\\"" ] ,"traceparent" :` + tp + ` , "b":null } `, true},
			{`{"note":"say \"hi\"","traceparent":` + strings.Replace(tp, "-", `\u002d`, 1) + `}`, true}, // escapes
			{`{"traceparent":` + tp + `,"traceparent":"00-bad"}`, false},                                // the last one counts
			{`{"TraceParent":` + tp + `}`, false},                                                       // names are matched exactly
			{`{"traceparent": 12}`, false},
			{`{"nested": {"traceparent": ` + tp + `}}`, false},
			{``, false},
		} {
			job := &sluice.JobRow{ID: fmt.Sprint("j", i), Topic: "mail", Queue: "default", Attempt: i + 1, Metadata: []byte(tc.meta)}
			var got trace.SpanContext
			require.NoError(t, mw.Work(t.Context(), job, func(ctx context.Context) error {
				got = trace.SpanContextFromContext(ctx)
				return nil
			}))
			spans := rec.Ended()
			work := spans[len(spans)-1]
			require.Equal(t, got.SpanID(), work.SpanContext().SpanID())
			require.Equal(t, tc.child, work.Parent().SpanID() == parent.SpanContext().SpanID(), "metadata %s", tc.meta)
			require.Equal(t, tc.child, work.SpanContext().TraceID() == parent.SpanContext().TraceID(), "metadata %s", tc.meta)
			// Each span has its own job's attributes, though what starts
			// them is reused from job to job.
			require.Equal(t, "sluice.work mail", work.Name())
			require.Equal(t, trace.SpanKindConsumer, work.SpanKind())
			require.ElementsMatch(t, []attribute.KeyValue{
				attribute.String("sluice.topic", "mail"), attribute.String("sluice.queue", "default"),
				attribute.String("messaging.system", "sluice"), attribute.String("messaging.operation.type", "process"),
				attribute.String("messaging.message.id", job.ID), attribute.Int("sluice.attempt", job.Attempt),
			}, work.Attributes())
		}
	}
}
