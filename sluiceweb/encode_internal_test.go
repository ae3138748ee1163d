package sluiceweb

import (
	"encoding/json"
	"reflect"
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
		if (extra%5+5)%5 == 4 {
			row.Key, row.Sequence = by, sluice.SequencePolicy(tags)
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
	keyed := *row
	keyed.Key, keyed.Sequence = "acme", sluice.SequenceHold
	// A new job, one that waited for others, one that waits, and one in
	// the sequence of its key.
	for _, j := range []*sluice.JobRow{row, &after, &waiting, &keyed} {
		res := enqueueResponse{Job: j}
		got, ok := appendEnqueueResponse(nil, res)
		require.True(t, ok)
		want, err := json.Marshal(res)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	}
}

// TestEnqueueResponseFastPathKnowsEveryField sets each field of JobRow in
// turn and checks that the answer written without encoding/json is still
// what encoding/json writes, or that the fast path declines: a field added
// to JobRow that the fast path leaves out fails here, not in a client.
func TestEnqueueResponseFastPathKnowsEveryField(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC().Truncate(time.Microsecond)
	base := sluice.JobRow{ID: "0193b4f0-0000-7000-8000-000000000001", Topic: "mail", Queue: "default",
		Payload: json.RawMessage(`{"n":1}`), Status: sluice.StatusPending, RunAt: now, CreatedAt: now}
	typ := reflect.TypeFor[sluice.JobRow]()
	for i := range typ.NumField() {
		field := typ.Field(i)
		row := base
		v := reflect.ValueOf(&row).Elem().Field(i)
		switch {
		case field.Type == reflect.TypeFor[time.Time]():
			v.Set(reflect.ValueOf(now.Add(time.Hour)))
		case field.Type == reflect.TypeFor[json.RawMessage]():
			v.Set(reflect.ValueOf(json.RawMessage(`{"a":1}`)))
		case v.Kind() == reflect.String:
			v.SetString("x1")
		case v.CanInt():
			v.SetInt(7)
		case v.Kind() == reflect.Bool:
			v.SetBool(true)
		case v.Kind() == reflect.Pointer:
			v.Set(reflect.New(field.Type.Elem()))
		case v.Kind() == reflect.Slice && field.Type.Elem().Kind() == reflect.String:
			v.Set(reflect.ValueOf([]string{"a"}).Convert(field.Type))
		case v.Kind() == reflect.Slice:
			v.Set(reflect.MakeSlice(field.Type, 1, 1))
		default:
			t.Fatalf("JobRow.%s is a %s: give it a value here", field.Name, field.Type)
		}
		res := enqueueResponse{Job: &row}
		got, ok := appendEnqueueResponse(nil, res)
		if !ok {
			continue // encoded by encoding/json
		}
		want, err := json.Marshal(res)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "JobRow.%s set", field.Name)
	}
}
