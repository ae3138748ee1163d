package sluiceotel

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// FuzzTraceContext checks that reading trace context without decoding the
// metadata finds what decoding it in full finds, whenever it answers.
func FuzzTraceContext(f *testing.F) {
	for _, s := range []string{`{}`, `{"traceparent":"00-a-b-01"}`, `{"traceparent": "x", "tracestate": "k=v"}`,
		`{"n":1,"o":{"traceparent":"no"},"l":[1,"]",{}],"traceparent":"yes"}`, `{"traceparent":1}`,
		`{"traceparent":"a\"b"}`, `[]`, `{"a":true,"tracestate":"s","b":-1.5e3,"c":null}`, ` { } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, meta []byte) {
		var all map[string]any
		if json.Unmarshal(meta, &all) != nil {
			return // stored metadata is a JSON object
		}
		parent, state, ok := traceContext(meta)
		if !ok {
			return
		}
		want := map[string]string{}
		for _, k := range []string{"traceparent", "tracestate"} {
			if s, isString := all[k].(string); isString && s != "" {
				want[k] = s
			}
		}
		require.Equal(t, want["traceparent"], parent)
		require.Equal(t, want["tracestate"], state)
	})
}

// TestTraceCarrier checks that traceCarrier is a TextMapCarrier of the two
// W3C trace context fields alone: what the propagator injects into it,
// it extracts again, and it names only the fields it holds.
func TestTraceCarrier(t *testing.T) {
	t.Parallel()
	ctx, span := sdktrace.NewTracerProvider().Tracer("test").Start(t.Context(), "request")
	span.End()
	ts, err := trace.ParseTraceState("k=v")
	require.NoError(t, err)
	ctx = trace.ContextWithSpanContext(ctx, span.SpanContext().WithTraceState(ts))
	var c traceCarrier
	require.Empty(t, c.Keys())
	prop := propagation.TraceContext{}
	prop.Inject(ctx, &c)
	require.ElementsMatch(t, []string{"traceparent", "tracestate"}, c.Keys())
	require.Equal(t, "k=v", c.Get("tracestate"))
	require.Empty(t, c.Get("baggage"))
	c.Set("baggage", "ignored")
	require.Len(t, c.Keys(), 2)
	got := trace.SpanContextFromContext(prop.Extract(t.Context(), &c))
	require.True(t, got.IsRemote())
	require.Equal(t, span.SpanContext().TraceID(), got.TraceID())
	require.Equal(t, span.SpanContext().SpanID(), got.SpanID())
	require.Equal(t, "k=v", got.TraceState().String())
}
