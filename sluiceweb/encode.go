package sluiceweb

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// appendEnqueueResponse appends the JSON of res, the answer of POST
// api/jobs, byte for byte as encoding/json writes it, without its
// reflection: the answer is written on every enqueue. ok is false when the
// job holds what it does not write (errors, a result, progress, logs, a
// time outside of years 0 to 9999, JSON that is not compact or holds
// characters encoding/json escapes): encode res with encoding/json then.
func appendEnqueueResponse(b []byte, res enqueueResponse) (_ []byte, ok bool) {
	j := res.Job
	if j == nil || j.Errors != nil || j.Result != nil || j.Progress != nil || j.Logs != nil || j.LogsDropped != 0 {
		return nil, false
	}
	b = append(b, `{"job":{"id":`...)
	b = driver.AppendJSONString(b, j.ID)
	b = append(b, `,"topic":`...)
	b = driver.AppendJSONString(b, j.Topic)
	b = append(b, `,"queue":`...)
	b = driver.AppendJSONString(b, j.Queue)
	b = append(b, `,"priority":`...)
	b = strconv.AppendInt(b, int64(j.Priority), 10)
	b = append(b, `,"payload":`...)
	if b, ok = appendRaw(b, j.Payload); !ok {
		return nil, false
	}
	b = append(b, `,"status":`...)
	b = driver.AppendJSONString(b, string(j.Status))
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(j.Attempt), 10)
	b = append(b, `,"max_retries":`...)
	b = strconv.AppendInt(b, int64(j.MaxRetries), 10)
	for _, f := range []struct {
		name      string // the member's name, with its comma and colon
		t         time.Time
		omitZero  bool
		s         string
		isString  bool
		omitEmpty bool
	}{
		{name: `,"run_at":`, t: j.RunAt},
		{name: `,"created_at":`, t: j.CreatedAt},
		{name: `,"attempted_at":`, t: j.AttemptedAt, omitZero: true},
		{name: `,"attempted_by":`, s: j.AttemptedBy, isString: true, omitEmpty: true},
		{name: `,"finalized_at":`, t: j.FinalizedAt, omitZero: true},
		{name: `,"locked_until":`, t: j.LockedUntil, omitZero: true},
		{name: `,"locked_by":`, s: j.LockedBy, isString: true, omitEmpty: true},
		{name: `,"unique_key":`, s: j.UniqueKey, isString: true, omitEmpty: true},
	} {
		switch {
		case f.isString && f.omitEmpty && f.s == "", !f.isString && f.omitZero && f.t.IsZero():
			continue
		case f.isString:
			b = append(b, f.name...)
			b = driver.AppendJSONString(b, f.s)
		default:
			if y := f.t.Year(); y < 0 || y > 9999 {
				return nil, false
			}
			b = append(append(b, f.name...), '"')
			b = f.t.AppendFormat(b, time.RFC3339Nano)
			b = append(b, '"')
		}
	}
	b = appendStrings(b, `,"tags":`, j.Tags)
	if len(j.Metadata) > 0 {
		b = append(b, `,"metadata":`...)
		if b, ok = appendRaw(b, j.Metadata); !ok {
			return nil, false
		}
	}
	b = appendStrings(b, `,"depends_on":`, j.DependsOn)
	if j.Waiting {
		b = append(b, `,"waiting":true`...)
	}
	for _, f := range []struct{ name, s string }{
		{`,"key":`, j.Key}, {`,"sequence":`, string(j.Sequence)},
		{`,"group_id":`, j.GroupID}, {`,"task":`, j.Task}, {`,"callback_of":`, j.CallbackOf},
	} {
		if f.s != "" {
			b = driver.AppendJSONString(append(b, f.name...), f.s)
		}
	}
	b = append(b, `},"duplicate":`...)
	b = strconv.AppendBool(b, res.Duplicate)
	return append(b, '}'), true
}

// appendStrings appends name (with its comma and colon) and ss as a JSON
// array, unless ss is empty (omitempty).
func appendStrings(b []byte, name string, ss []string) []byte {
	if len(ss) == 0 {
		return b
	}
	b = append(append(b, name...), '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = driver.AppendJSONString(b, s)
	}
	return append(b, ']')
}

// appendRaw appends raw, a JSON value, when encoding/json would write it
// unchanged: valid, compact, and without the characters it escapes.
func appendRaw(b []byte, raw json.RawMessage) ([]byte, bool) {
	if len(raw) == 0 {
		return append(b, "null"...), true
	}
	// Whitespace, the HTML characters, and the first byte of U+2028 and
	// U+2029 (and of other characters, which then take the slow path).
	if bytes.ContainsAny(raw, " \t\r\n<>&\xe2") || !json.Valid(raw) {
		return nil, false
	}
	return append(b, raw...), true
}

// writeEnqueueResponse answers POST api/jobs with res and status.
func writeEnqueueResponse(w http.ResponseWriter, status int, res enqueueResponse) {
	body, ok := appendEnqueueResponse(make([]byte, 0, 512), res)
	if !ok {
		writeJSON(w, status, res)
		return
	}
	writeBody(w, status, body)
}
