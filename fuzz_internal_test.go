package sluice

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

type fuzzArgs struct {
	S string         `json:"s"`
	N int            `json:"n"`
	M map[string]any `json:"m"`
}

func (fuzzArgs) Topic() string { return "fuzz" }

// FuzzJobArgsDecoding hands arbitrary stored payloads to a worker's
// decoding: a payload that is not its arguments' JSON is an error, never a
// panic, and one that decodes reaches the worker as exactly those
// arguments.
func FuzzJobArgsDecoding(f *testing.F) {
	f.Add([]byte(`{"s":"a","n":1}`))
	f.Add([]byte(`{"s":"\u00e9","n":-1,"m":{"k":[1,2,{"x":null}]}}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"n":1e400}`))
	f.Add([]byte(`{"s":`))
	f.Add([]byte(`[]`))
	f.Add([]byte{})
	f.Add([]byte(`{"sluice_sealed": "v1", "key": "k1", "data": "AAAA"}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		var got *fuzzArgs
		workers := NewWorkers()
		AddWorker(workers, WorkFunc(func(_ context.Context, job *Job[fuzzArgs]) error {
			got = &job.Args
			return nil
		}))
		cfg, err := (&Config{Workers: workers}).withDefaults()
		require.NoError(t, err)
		jr := &jobRun{row: &JobRow{ID: "id", Topic: "fuzz", Payload: payload}, unit: workers.units["fuzz"], run: &run{cfg: cfg}}
		job, _, err := jr.unit.prepare(jr)
		if _, sealed := PayloadKeyID(jr.row); sealed {
			require.ErrorIs(t, err, ErrUnknownKey, "an encrypted payload, and the client has no key")
			return
		}
		var want fuzzArgs
		if werr := json.Unmarshal(payload, &want); werr != nil {
			require.Error(t, err)
			require.Contains(t, err.Error(), `decode args of "fuzz"`)
			return
		}
		require.NoError(t, err)
		require.NoError(t, jr.unit.work(t.Context(), job))
		require.Equal(t, want, *got)
	})
}
