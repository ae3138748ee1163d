package sluiceotel

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
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
