package sluiceweb

import (
	"bytes"
	"encoding/json"

	"github.com/sluicehq/sluice"
)

// metadataPrefix starts the query parameters that filter by metadata:
// metadata.<key>=<value>.
const metadataPrefix = "metadata."

// payloadPrefix starts the query parameters that filter by payload
// values: payload.<path>=<value>.
const payloadPrefix = "payload."

// payloadConditions returns the payload conditions of a filter as the
// client takes them: each value of the query, text, as sluice.PayloadValue
// reads it; each of a body as the JSON it is. The client checks paths and
// values.
func payloadConditions(query map[string]string, body map[string]json.RawMessage) map[string]any {
	if len(query) == 0 && len(body) == 0 {
		return nil
	}
	out := make(map[string]any, len(query)+len(body))
	for path, v := range query {
		out[path] = sluice.PayloadValue(v)
	}
	for path, v := range body {
		out[path] = v
	}
	return out
}

// metadataObject returns the metadata member of an enqueue, a JSON object,
// as the client takes it: numbers as they were written (json.Number), nil
// when absent or null.
func metadataObject(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var meta map[string]any
	if err := dec.Decode(&meta); err != nil {
		return nil, badRequest(CodeInvalidRequest, "metadata", "must be a JSON object")
	}
	return meta, nil
}

// withoutLogs clears the logs of rows, which only GET api/jobs/{id}
// shows, and returns them.
func withoutLogs(rows ...*sluice.JobRow) []*sluice.JobRow {
	for _, r := range rows {
		if r != nil {
			r.Logs, r.LogsDropped = nil, 0
		}
	}
	return rows
}
