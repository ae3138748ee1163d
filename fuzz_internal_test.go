package sluice

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

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
	f.Fuzz(func(t *testing.T, payload []byte) {
		var got *fuzzArgs
		workers := NewWorkers()
		AddWorker(workers, WorkFunc(func(_ context.Context, job *Job[fuzzArgs]) error {
			got = &job.Args
			return nil
		}))
		jr := &jobRun{row: &JobRow{ID: "id", Topic: "fuzz", Payload: payload}, unit: workers.units["fuzz"]}
		job, _, err := jr.unit.prepare(jr)
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

// FuzzHasNUL checks the NUL test on encoded JSON against the text encoded:
// it finds a NUL character exactly when the text has one, whatever
// backslashes surround it.
func FuzzHasNUL(f *testing.F) {
	for _, s := range []string{"", "a", "\x00", `\u0000`, "\\\x00", `\\u0000`, "a\x00b", "\xff\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := json.Marshal(map[string]string{s: s})
		require.NoError(t, err)
		require.Equal(t, strings.Contains(s, "\x00"), hasNUL(b), "%q", b)
	})
}

// FuzzCleanText checks what an enormous or odd error is stored as: no NUL,
// at most the limit, valid UTF-8 when the error was, and unchanged when it
// was short and clean already.
func FuzzCleanText(f *testing.F) {
	f.Add("boom", 4096)
	f.Add(strings.Repeat("é", 3000), 4096)
	f.Add("a\x00b", 2)
	f.Add("\xff\xfe", 20)
	f.Fuzz(func(t *testing.T, s string, n int) {
		n = 20 + int(uint(n)%(1<<14))
		got := cleanText(s, n)
		require.NotContains(t, got, "\x00")
		require.LessOrEqual(t, len(got), n)
		if utf8.ValidString(s) {
			require.True(t, utf8.ValidString(got))
		}
		clean := strings.ReplaceAll(s, "\x00", "")
		if len(clean) <= n {
			require.Equal(t, clean, got)
		} else {
			require.True(t, strings.HasSuffix(got, "… (truncated)"))
			require.True(t, strings.HasPrefix(clean, strings.TrimSuffix(got, "… (truncated)")))
		}
		_ = errors.New(got)
	})
}
