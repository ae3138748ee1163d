package sluiceweb

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

// FuzzGroupRequest decodes bodies as a workflow's and a batch's: a body is
// refused with a problem (400), or gives jobs whose every member is named
// exactly as a field of a job, whose topics are text, whose payloads are
// one JSON value each, and, in a workflow, whose task names are each
// given once and whose afters name tasks.
func FuzzGroupRequest(f *testing.F) {
	for _, s := range []string{
		`{"name":"w","tasks":[{"name":"a","topic":"mail"},{"name":"b","topic":"mail","after":["a"]}],"on_success":[{"topic":"mail"}]}`,
		`{"tasks":[{"name":"a","topic":"mail","Topic":"sms"}]}`,
		`{"tasks":[{"Name":"a","topic":"mail"}]}`,
		`{"tasks":[{"name":"a","topic":"mail"},{"name":"a","topic":"mail"}]}`,
		`{"tasks":[{"name":"a","topic":"mail","after":["b"]}]}`,
		`{"tasks":[{"name":"a\u0000","topic":"mail"}]}`,
		`{"tasks":[{"name":"a","topic":"mail","payload":{"to":"x","TO":"y"}}]}`,
		"{\"tasks\":[{\"name\":\"a\xff\",\"topic\":\"mail\"}]}",
		`{"jobs":[{"topic":"mail","payload":[1,2]}],"keep_open":true,"on_failure":[{"topic":"x","delay":"1m"}]}`,
		`{"jobs":[{"topic":"mail","queue":"bulk","Queue":"x"}]}`,
		`{"jobs":[], "keep_open": true}`,
		`{"tasks":"a"}`, `{"tasks":[1]}`, `{"on_complete":[{"topic":"mail","metadata":{"a":1}}],"tasks":[{"name":"t","topic":"m"}]}`,
	} {
		f.Add([]byte(s))
	}
	h := &Handler{bodyLimit: 1 << 20}
	f.Fuzz(func(t *testing.T, body []byte) {
		decode := func(v any) bool {
			r := httptest.NewRequest(http.MethodPost, "/api/workflows", bytes.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			_, err := decodeBodyUpTo(httptest.NewRecorder(), r, v, h.groupBodyLimit())
			requireRefused(t, err)
			return err == nil
		}
		var wr workflowRequest
		if decode(&wr) {
			_, jobs, err := wr.workflow()
			requireRefused(t, err)
			if err == nil {
				requireExactJobs(t, jobs, append(append([]json.RawMessage{}, wr.Tasks...), callbackList(&wr.callbacksRequest)...), &taskRequest{})
				names := map[string]bool{}
				for _, j := range jobs.jobs[:len(wr.Tasks)] {
					require.NotEmpty(t, j.task)
					require.False(t, names[j.task], "task %q twice", j.task)
					names[j.task] = true
				}
				for i := range wr.Tasks {
					var task taskRequest
					require.NoError(t, json.Unmarshal(wr.Tasks[i], &task))
					for _, a := range task.After {
						require.True(t, names[a], "after %q", a)
					}
				}
			}
		}
		var br batchRequest
		if decode(&br) {
			_, jobs, err := br.batch()
			requireRefused(t, err)
			if err == nil {
				requireExactJobs(t, jobs, append(append([]json.RawMessage{}, br.Jobs...), callbackList(&br.callbacksRequest)...), &enqueueRequest{})
			}
		}
	})
}

// requireRefused requires err, if any, to be a problem of a bad request
// or a payload that does not encode.
func requireRefused(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var p *problem
	var ae *sluice.ArgsError
	switch {
	case errors.As(err, &p):
		require.Equal(t, http.StatusBadRequest, p.Status, "%v", err)
	case errors.As(err, &ae):
	default:
		t.Fatalf("not a problem: %v", err)
	}
}

// callbackList returns a request's callbacks in the order jobs are
// decoded.
func callbackList(cb *callbacksRequest) []json.RawMessage {
	return append(append(append([]json.RawMessage{}, cb.OnSuccess...), cb.OnFailure...), cb.OnComplete...)
}

// requireExactJobs requires each job decoded from raws to have members
// that name first, and its topic and payload to be what a job holds.
func requireExactJobs(t *testing.T, jobs *groupJobs, raws []json.RawMessage, first any) {
	t.Helper()
	require.Len(t, jobs.jobs, len(raws))
	for i, j := range jobs.jobs {
		var members map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(raws[i], &members))
		known := fieldNames(&enqueueRequest{})
		if strings.HasPrefix(j.field, "tasks[") {
			known = fieldNames(first)
		}
		for name := range members {
			require.True(t, known[name], "%s.%s", j.field, name)
		}
		require.True(t, utf8.ValidString(j.args.TopicName))
		require.NotContains(t, j.args.TopicName, "\x00")
		require.True(t, json.Valid(j.args.Payload), "%s", j.args.Payload)
	}
}
