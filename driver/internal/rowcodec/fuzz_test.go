package rowcodec_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/rowcodec"
)

// FuzzErrors decodes arbitrary errors columns: anything but a JSON array of
// attempt errors is an error, never a panic; what decodes has its times in
// UTC and survives encoding and decoding again unchanged.
func FuzzErrors(f *testing.F) {
	f.Add([]byte(`[{"attempt":1,"at":"2026-01-08T13:00:00+01:00","error":"x"}]`))
	f.Add([]byte(`[{"attempt":2,"at":"2026-01-08T12:00:00.123456Z","error":"é","trace":"goroutine 1"}]`))
	f.Add([]byte(`null`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"at":"not a time"}]`))
	f.Add([]byte(`{"attempt":1}`))
	f.Add([]byte(`[{"attempt":1e99}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		errs, err := rowcodec.Errors(data)
		if err != nil {
			require.Nil(t, errs)
			return
		}
		for _, e := range errs {
			require.Equal(t, time.UTC, e.At.Location())
		}
		b, err := json.Marshal(errs)
		require.NoError(t, err)
		again, err := rowcodec.Errors(b)
		require.NoError(t, err)
		if len(errs) == 0 {
			require.Empty(t, again)
			return
		}
		require.Equal(t, errs, again)
	})
}

// FuzzStored checks the stored form of times: UTC, floored to the
// microsecond, idempotent, and zero for zero.
func FuzzStored(f *testing.F) {
	f.Add(int64(0), int64(0), 0)
	f.Add(int64(1767225600), int64(999_999_999), 3600)
	f.Add(int64(-62135596800), int64(1), -7200)
	f.Add(int64(-1), int64(500), 0)
	f.Fuzz(func(t *testing.T, sec, nsec int64, offset int) {
		in := time.Unix(sec%(1<<40), nsec).In(time.FixedZone("z", offset%(24*3600)))
		got := rowcodec.Stored(in)
		if in.IsZero() {
			require.True(t, got.IsZero())
			return
		}
		require.Equal(t, time.UTC, got.Location())
		require.Zero(t, got.Nanosecond()%1000)
		require.False(t, got.After(in))
		require.Less(t, in.Sub(got), time.Microsecond)
		require.Equal(t, got, rowcodec.Stored(got))
	})
}

// FuzzProgress decodes arbitrary progress columns: anything but a JSON
// object (or null) is an error, never a panic; what decodes has its time in
// UTC and survives encoding and decoding again unchanged.
func FuzzProgress(f *testing.F) {
	f.Add([]byte(`{"attempt":1,"percent":12.5,"message":"copying","at":"2026-01-08T13:00:00.123456+01:00"}`))
	f.Add([]byte(`{"attempt":2,"percent":100,"at":"2026-01-08T12:00:00Z"}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"at":"not a time"}`))
	f.Add([]byte(`{"percent":1e999}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := rowcodec.Progress(data)
		if err != nil || p == nil {
			require.Nil(t, p)
			return
		}
		require.Equal(t, time.UTC, p.At.Location())
		b, err := json.Marshal(p)
		if err != nil {
			return // a percent JSON cannot hold (never stored: the client checks it)
		}
		again, err := rowcodec.Progress(b)
		require.NoError(t, err)
		require.Equal(t, p, again)
	})
}

// FuzzClientMaxWorkers decodes arbitrary stored worker counts: anything but
// a JSON object of integers (or null) is an error, never a panic; what
// decodes is stored again as it was read.
func FuzzClientMaxWorkers(f *testing.F) {
	f.Add([]byte(`{"default":10,"mail":2}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`["default"]`))
	f.Add([]byte(`{"default":1.5}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := string(data)
		var c driver.ClientRow
		if err := rowcodec.DecodeClientMaxWorkers(&s, &c); err != nil {
			return
		}
		if c.MaxWorkers == nil {
			require.Nil(t, rowcodec.ClientMaxWorkers(&c))
			return
		}
		var again driver.ClientRow
		require.NoError(t, rowcodec.DecodeClientMaxWorkers(rowcodec.ClientMaxWorkers(&c), &again))
		require.Equal(t, c.MaxWorkers, again.MaxWorkers)
	})
}
