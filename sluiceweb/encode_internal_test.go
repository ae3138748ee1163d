package sluiceweb

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

// FuzzEnqueueResponse checks that the answer of POST api/jobs written
// without encoding/json is what encoding/json writes, and that a new job
// with a compact payload takes that path.
func FuzzEnqueueResponse(f *testing.F) {
	f.Add("0193-id", "mail", "default", 3, []byte(`{"n":1}`), "pending", 0, 25, int64(1_700_000_000_123_456_000), 0,
		"", "a,b", []byte(`{"traceparent":"00-x"}`), false, 0)
	f.Add("x\"<>&", "t\u2028", "q\xff", -1, []byte(`{"s": "<b>"}`), "processing", 2, 0, int64(-1), 3600,
		"client-1", "", []byte(nil), true, 1)
	f.Add("id", "t", "q", 0, []byte(`[1,"\u2713"]`), "completed", 1, 3, int64(0), -7200, "k", "é", []byte(`{}`), true, 2)
	f.Fuzz(func(t *testing.T, id, topic, queue string, priority int, payload []byte, status string, attempt, maxRetries int,
		nanos int64, zone int, by, tags string, meta []byte, dup bool, extra int) {
		if !json.Valid(payload) || len(meta) > 0 && !json.Valid(meta) {
			return // stored payloads and metadata are JSON
		}
		at := time.Unix(0, nanos).In(time.FixedZone("Z", zone%86400))
		row := &sluice.JobRow{ID: id, Topic: topic, Queue: queue, Priority: priority, Payload: payload,
			Status: sluice.JobStatus(status), Attempt: attempt, MaxRetries: maxRetries, RunAt: at, CreatedAt: at.Add(-time.Second),
			UniqueKey: by, Metadata: meta}
		if tags != "" {
			row.Tags = strings.Split(tags, ",")
		}
		if dup && extra%2 == 0 {
			row.DependsOn, row.Waiting = []string{id, by}, extra%3 == 0
		}
		switch (extra%4 + 4) % 4 {
		case 1:
			row.AttemptedAt, row.AttemptedBy, row.LockedBy, row.LockedUntil = at, by, by, at.Add(time.Minute)
		case 2:
			row.FinalizedAt, row.Result = at, json.RawMessage(`{"ok":true}`)
		case 3:
			row.Errors = []sluice.AttemptError{{Attempt: 1, At: at, Error: "boom"}}
		}
		res := enqueueResponse{Job: row, Duplicate: dup}
		want, err := json.Marshal(res)
		got, ok := appendEnqueueResponse(nil, res)
		if ok {
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))
		}
	})
}

// TestEnqueueResponseFastPath checks that the answer for a new job, as an
// enqueue stores it, is written without encoding/json.
func TestEnqueueResponseFastPath(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC().Truncate(time.Microsecond)
	row := &sluice.JobRow{ID: "0193b4f0-0000-7000-8000-000000000001", Topic: "mail", Queue: "default",
		Payload: json.RawMessage(`{"to":"a@b.c","n":1}`), Status: sluice.StatusPending, MaxRetries: 25,
		RunAt: now, CreatedAt: now, Tags: []string{"x"}, Metadata: json.RawMessage(`{"k":"v"}`)}
	after := *row
	after.DependsOn = []string{"0193b4f0-0000-7000-8000-000000000002", "0193b4f0-0000-7000-8000-000000000003"}
	waiting := after
	waiting.Waiting = true
	// A new job, one that waited for others, and one that waits.
	for _, j := range []*sluice.JobRow{row, &after, &waiting} {
		res := enqueueResponse{Job: j}
		got, ok := appendEnqueueResponse(nil, res)
		require.True(t, ok)
		want, err := json.Marshal(res)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	}
}
