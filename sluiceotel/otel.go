package sluiceotel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice"
)

// scope names the tracer and meter of this package.
const scope = "github.com/sluicehq/sluice/sluiceotel"

// Option configures a Middleware.
type Option func(*options)

type options struct {
	tp   trace.TracerProvider
	mp   metric.MeterProvider
	prop propagation.TextMapPropagator
}

// WithTracerProvider sets where spans go; default otel.GetTracerProvider().
func WithTracerProvider(tp trace.TracerProvider) Option { return func(o *options) { o.tp = tp } }

// WithMeterProvider sets where metrics go; default otel.GetMeterProvider().
func WithMeterProvider(mp metric.MeterProvider) Option { return func(o *options) { o.mp = mp } }

// WithPropagator sets how trace context is written into and read from job
// metadata; default W3C trace context (traceparent and tracestate).
func WithPropagator(p propagation.TextMapPropagator) Option { return func(o *options) { o.prop = p } }

// Middleware traces and measures enqueues and work; see the package
// documentation. It keeps, for each topic and queue it has seen, the
// attributes their spans and metrics share, made once.
type Middleware struct {
	tracer trace.Tracer
	meter  metric.Meter
	prop   propagation.TextMapPropagator

	enqueued, completed, failed metric.Int64Counter
	duration, lag               metric.Float64Histogram

	// traceContextOnly is set when prop reads only W3C trace context, which
	// metadata then gives without decoding its other values.
	traceContextOnly bool
	// labels holds a *labels for each topic and queue seen.
	labels sync.Map
	// starts keeps *workStart values for reuse.
	starts sync.Pool
}

// labels are what the spans and metrics of one topic and queue share,
// made once rather than for each job.
type labels struct {
	workSpan  string
	spanAttrs []attribute.KeyValue // of a work span, before the job's own
	// add and record are the options of every measurement: the topic
	// and queue as one attribute set.
	add    []metric.AddOption
	record []metric.RecordOption
}

// topicQueue keys Middleware.labels.
type topicQueue struct{ topic, queue string }

// labelsFor returns the labels of topic and queue.
func (m *Middleware) labelsFor(topic, queue string) *labels {
	key := topicQueue{topic, queue}
	if l, ok := m.labels.Load(key); ok {
		return l.(*labels)
	}
	attrs := []attribute.KeyValue{attribute.String("sluice.topic", topic), attribute.String("sluice.queue", queue)}
	set := metric.WithAttributeSet(attribute.NewSet(attrs...))
	// An array of spanLabels, so that a label added here and not there
	// does not compile.
	spanAttrs := [spanLabels]attribute.KeyValue{attrs[0], attrs[1], attribute.String("messaging.system", "sluice"),
		attribute.String("messaging.operation.type", "process")}
	l := &labels{
		workSpan:  "sluice.work " + topic,
		spanAttrs: spanAttrs[:],
		add:       []metric.AddOption{set},
		record:    []metric.RecordOption{set},
	}
	actual, _ := m.labels.LoadOrStore(key, l)
	return actual.(*labels)
}

// secondsBuckets are the bucket boundaries of the histograms in seconds,
// from 1 ms to 10 minutes (the default job timeout). The SDK's default
// boundaries, 0 to 10,000, suit milliseconds: in seconds they would put
// nearly every job in the first bucket.
var secondsBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// New returns a Middleware, or an error if an instrument cannot be made.
func New(opts ...Option) (*Middleware, error) {
	o := options{tp: otel.GetTracerProvider(), mp: otel.GetMeterProvider(), prop: propagation.TraceContext{}}
	for _, opt := range opts {
		opt(&o)
	}
	m := &Middleware{tracer: o.tp.Tracer(scope), meter: o.mp.Meter(scope), prop: o.prop}
	m.starts.New = newWorkStart
	fields := o.prop.Fields()
	slices.Sort(fields)
	m.traceContextOnly = slices.Equal(fields, []string{"traceparent", "tracestate"})
	var errs [5]error
	m.enqueued, errs[0] = m.meter.Int64Counter("sluice.jobs.enqueued", metric.WithDescription("Jobs enqueued."))
	m.completed, errs[1] = m.meter.Int64Counter("sluice.jobs.completed",
		metric.WithDescription("Attempts whose worker returned nil."))
	m.failed, errs[2] = m.meter.Int64Counter("sluice.jobs.failed",
		metric.WithDescription("Attempts whose worker returned an error or panicked."))
	m.duration, errs[3] = m.meter.Float64Histogram("sluice.job.duration", metric.WithUnit("s"),
		metric.WithDescription("How long a job's work took."), metric.WithExplicitBucketBoundaries(secondsBuckets...))
	m.lag, errs[4] = m.meter.Float64Histogram("sluice.job.lag", metric.WithUnit("s"),
		metric.WithDescription("From when a job was due to when its attempt was claimed."),
		metric.WithExplicitBucketBoundaries(secondsBuckets...))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	return m, nil
}

// Enqueue implements sluice.EnqueueMiddleware: a producer span around the
// enqueue, whose context each job carries in its metadata.
func (m *Middleware) Enqueue(ctx context.Context, jobs []*sluice.EnqueueJob,
	next func(context.Context) ([]sluice.EnqueueResult, error)) ([]sluice.EnqueueResult, error) {
	name := "sluice.enqueue"
	if len(jobs) == 1 {
		name += " " + jobs[0].Topic
	}
	ctx, span := m.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("messaging.system", "sluice"),
			attribute.String("messaging.operation.type", "send"),
			attribute.Int("messaging.batch.message_count", len(jobs))))
	defer span.End()
	carrier := propagation.MapCarrier{}
	m.prop.Inject(ctx, carrier)
	for _, j := range jobs {
		if len(carrier) == 0 {
			break // no span context to carry (tracing off)
		}
		if j.Options.Metadata == nil {
			j.Options.Metadata = make(map[string]any, len(carrier))
		}
		for k, v := range carrier {
			j.Options.Metadata[k] = v
		}
	}
	res, err := next(ctx)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return res, err
	}
	for i, r := range res {
		if r.Duplicate {
			continue
		}
		m.enqueued.Add(ctx, 1, m.labelsFor(jobs[i].Topic, r.Job.Queue).add...)
	}
	if len(res) == 1 {
		span.SetAttributes(attribute.String("messaging.message.id", res[0].Job.ID))
	}
	return res, nil
}

// Work implements sluice.WorkMiddleware: a consumer span around the work,
// child of the span that enqueued the job, and the job's metrics.
func (m *Middleware) Work(ctx context.Context, job *sluice.JobRow, next func(context.Context) error) error {
	l := m.labelsFor(job.Topic, job.Queue)
	ctx, span := m.startWork(ctx, job, l)
	defer span.End()
	if !job.AttemptedAt.IsZero() {
		m.lag.Record(ctx, max(job.AttemptedAt.Sub(job.RunAt), 0).Seconds(), l.record...)
	}
	start := time.Now()
	err := next(ctx)
	m.duration.Record(ctx, time.Since(start).Seconds(), l.record...)
	if err != nil {
		m.failed.Add(ctx, 1, l.add...)
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return err
	}
	m.completed.Add(ctx, 1, l.add...)
	return nil
}

// workStart is what starting a work span takes besides its name: the
// carrier of the job's trace context, the span's attributes and the
// options that hold them. Middleware.starts keeps them for reuse, as none
// is referred to once the span has started: propagators read a carrier
// while they extract, and trace.NewSpanStartConfig copies the attributes
// out of the options. That is how the OpenTelemetry SDK (and the no-op
// tracer) use them; a tracer of another make that kept the options
// themselves would see them reused.
type workStart struct {
	carrier traceCarrier
	attrs   []attribute.KeyValue
	opts    []trace.SpanStartOption
}

// spanLabels is how many attributes labels.spanAttrs holds.
const spanLabels = 4

// workSpanAttrs is how many attributes a work span starts with: those of
// labels.spanAttrs, the job's ID and its attempt.
const workSpanAttrs = spanLabels + 2

// newWorkStart returns a workStart whose options refer to its attributes.
func newWorkStart() any {
	w := &workStart{attrs: make([]attribute.KeyValue, workSpanAttrs)}
	w.opts = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(w.attrs...)}
	return w
}

// startWork starts the work span of job, child of the context its
// metadata carries.
func (m *Middleware) startWork(ctx context.Context, job *sluice.JobRow, l *labels) (context.Context, trace.Span) {
	w := m.starts.Get().(*workStart)
	defer func() {
		w.carrier = traceCarrier{}
		clear(w.attrs)
		m.starts.Put(w)
	}()
	if m.traceContextOnly && w.carrier.read(job.Metadata) {
		ctx = m.prop.Extract(ctx, &w.carrier)
	} else {
		ctx = m.prop.Extract(ctx, metadataCarrier(job.Metadata))
	}
	n := copy(w.attrs, l.spanAttrs)
	w.attrs[n] = attribute.String("messaging.message.id", job.ID)
	w.attrs[n+1] = attribute.Int("sluice.attempt", job.Attempt)
	return m.tracer.Start(ctx, l.workSpan, w.opts...)
}

// traceCarrier is a propagation.TextMapCarrier of W3C trace context alone:
// traceparent and tracestate.
type traceCarrier struct{ parent, state string }

// read sets c from metadata, without decoding its other values; false
// when it cannot (see traceContext).
func (c *traceCarrier) read(meta json.RawMessage) bool {
	if len(meta) == 0 {
		return true
	}
	var ok bool
	c.parent, c.state, ok = traceContext(meta)
	return ok
}

// Get implements propagation.TextMapCarrier.
func (c *traceCarrier) Get(key string) string {
	switch key {
	case "traceparent":
		return c.parent
	case "tracestate":
		return c.state
	}
	return ""
}

// Set implements propagation.TextMapCarrier.
func (c *traceCarrier) Set(key, value string) {
	switch key {
	case "traceparent":
		c.parent = value
	case "tracestate":
		c.state = value
	}
}

// Keys implements propagation.TextMapCarrier.
func (c *traceCarrier) Keys() []string {
	keys := make([]string, 0, 2)
	if c.parent != "" {
		keys = append(keys, "traceparent")
	}
	if c.state != "" {
		keys = append(keys, "tracestate")
	}
	return keys
}

// metadataCarrier returns the string values of a job's metadata, decoded
// in full, as a carrier of trace context; empty when it has none.
func metadataCarrier(meta json.RawMessage) propagation.MapCarrier {
	c := propagation.MapCarrier{}
	if len(meta) == 0 {
		return c
	}
	var all map[string]any
	if json.Unmarshal(meta, &all) != nil {
		return c
	}
	for k, v := range all {
		if s, ok := v.(string); ok {
			c[k] = s
		}
	}
	return c
}

// traceContext reads the top-level members traceparent and tracestate of
// meta, a JSON object, without decoding its other values. ok is false when
// meta is not an object, or one of them, or a name, holds an escape, or
// one of them is not a string of valid UTF-8: decode meta in full then.
func traceContext(meta []byte) (parent, state string, ok bool) {
	i := skipSpace(meta, 0)
	if i >= len(meta) || meta[i] != '{' {
		return "", "", false
	}
	if i = skipSpace(meta, i+1); i < len(meta) && meta[i] == '}' {
		return "", "", true
	}
	for i < len(meta) && meta[i] == '"' {
		end, ok := skipString(meta, i)
		name := meta[i+1 : max(end-1, i+1)]
		if !ok || bytes.IndexByte(name, '\\') >= 0 {
			return "", "", false
		}
		if i = skipSpace(meta, end); i >= len(meta) || meta[i] != ':' {
			return "", "", false
		}
		start := skipSpace(meta, i+1)
		if i, ok = skipValue(meta, start); !ok {
			return "", "", false
		}
		if string(name) == "traceparent" || string(name) == "tracestate" {
			v := meta[start:i]
			if len(v) < 2 || v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 || !utf8.Valid(v) {
				return "", "", false
			}
			if string(name) == "traceparent" {
				parent = string(v[1 : len(v)-1])
			} else {
				state = string(v[1 : len(v)-1])
			}
		}
		switch i = skipSpace(meta, i); {
		case i < len(meta) && meta[i] == ',':
			i = skipSpace(meta, i+1)
		case i < len(meta) && meta[i] == '}':
			return parent, state, skipSpace(meta, i+1) == len(meta)
		default:
			return "", "", false
		}
	}
	return "", "", false
}

// skipSpace returns the index of the first byte of b from i on that is
// not JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the JSON string that starts at b[i].
func skipString(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return len(b), false
}

// skipValue returns the index after the JSON value that starts at b[i].
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				var ok bool
				if i, ok = skipString(b, i); !ok {
					return i, false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return i, false
	}
	start := i // a number, true, false or null
	for ; i < len(b); i++ {
		switch b[i] {
		case ' ', '\t', '\r', '\n', ',', '}', ']':
			return i, i > start
		}
	}
	return i, i > start
}

// StatsReader is what ObserveQueues reads: a sluice.Client of any
// transaction type.
type StatsReader interface {
	Stats(ctx context.Context, f *sluice.StatsFilter) (*sluice.Stats, error)
}

// ObserveQueues reports, at each collection, from one client.Stats read
// of the counts sluice keeps (not a count of the table) and of the claim
// index: sluice.queue.depth, the jobs of each queue by status;
// sluice.queue.running, its jobs being worked; and
// sluice.queue.oldest_pending_age, how long its longest-waiting due job
// has been due, in seconds (0 when none is due). Every process and every
// database reads the same figures, so one process's are enough: observe
// queues in one process per database, or aggregate with max. Unregister
// the registration when the client is gone.
func (m *Middleware) ObserveQueues(client StatsReader) (metric.Registration, error) {
	depth, err1 := m.meter.Int64ObservableGauge("sluice.queue.depth",
		metric.WithDescription("Jobs in each queue, by status."))
	running, err2 := m.meter.Int64ObservableGauge("sluice.queue.running",
		metric.WithDescription("Jobs of each queue being worked (processing)."))
	age, err3 := m.meter.Float64ObservableGauge("sluice.queue.oldest_pending_age", metric.WithUnit("s"),
		metric.WithDescription("How long the longest-waiting due job of each queue has been due."))
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, err
	}
	return m.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		// The shortest window: the outcome figures Stats also reads are
		// not reported here, and a short window keeps their read small.
		st, err := client.Stats(ctx, &sluice.StatsFilter{Window: time.Second, OldestDue: true})
		if err != nil {
			return err
		}
		now := time.Now()
		for queue, byStatus := range st.ByQueue {
			q := attribute.String("sluice.queue", queue)
			for status, n := range byStatus {
				o.ObserveInt64(depth, int64(n), metric.WithAttributes(q, attribute.String("sluice.status", string(status))))
			}
			o.ObserveInt64(running, int64(byStatus[sluice.StatusProcessing]), metric.WithAttributes(q))
			waited := 0.0
			if due, ok := st.OldestDue[queue]; ok {
				waited = max(now.Sub(due), 0).Seconds()
			}
			o.ObserveFloat64(age, waited, metric.WithAttributes(q))
		}
		return nil
	}, depth, running, age)
}
