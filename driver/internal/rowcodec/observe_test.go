package rowcodec_test

import (
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/rowcodec"
)

// FuzzLogsJSON checks that LogsJSON writes what json.Marshal writes of the
// cleaned logs, and that Logs reads back the records it was given, cleaned.
func FuzzLogsJSON(f *testing.F) {
	f.Add(1, 0, int64(1_700_000_000_123_456_789), "worked", []byte(`{"n": 1, "g": {"k": "v"}}`), 0)
	f.Add(3, 4, int64(0), "", []byte(nil), 7)
	f.Add(2, -4, int64(-5), "bad \xff and \x00 <b>", []byte(`{"s":"\u0000"}`), 1)
	f.Add(1, 12, int64(1), "line\nbreak \u2028", []byte(`null`), 0)
	f.Fuzz(func(t *testing.T, attempt, level int, nanos int64, msg string, attrs []byte, dropped int) {
		if len(attrs) > 0 && !json.Valid(attrs) {
			return // the client only ever keeps attributes it encoded
		}
		at := time.Unix(0, nanos).In(time.FixedZone("X", 3600))
		logs := &driver.JobLogs{Dropped: dropped, Records: []driver.LogRecord{
			{Attempt: attempt, Level: slog.Level(level), Time: at, Message: msg, Attrs: attrs},
			{Attempt: attempt + 1, Level: slog.LevelInfo, Time: at.Add(time.Second), Message: "second"},
		}}
		got, err := rowcodec.LogsJSON(logs)
		require.NoError(t, err)

		want := driver.JobLogs{Dropped: dropped}
		for _, r := range logs.Records {
			r.Time = rowcodec.Stored(r.Time)
			r.Message = driver.CleanText(r.Message, 0)
			want.Records = append(want.Records, r)
		}
		records, gotDropped, err := rowcodec.Logs(got)
		require.NoError(t, err)
		require.Equal(t, dropped, gotDropped)
		require.Len(t, records, 2)
		for i, r := range records {
			w := want.Records[i]
			require.Equal(t, w.Attempt, r.Attempt)
			require.Equal(t, w.Level, r.Level)
			require.True(t, w.Time.Equal(r.Time), "time %v, want %v", r.Time, w.Time)
			require.Equal(t, w.Message, r.Message)
			if len(w.Attrs) == 0 {
				require.Empty(t, r.Attrs)
			} else if driver.CheckJSON(w.Attrs) == nil {
				require.JSONEq(t, string(w.Attrs), string(r.Attrs))
			}
		}
		if driver.CheckJSON(attrs) == nil {
			marshalled, err := json.Marshal(want)
			require.NoError(t, err)
			require.JSONEq(t, string(marshalled), string(got))
		}
	})
}
