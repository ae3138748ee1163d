package sluiceweb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice"
)

// The codes of the problems the handler answers with, in the member "code"
// of an application/problem+json body (RFC 9457). They are stable: branch
// on them, not on the detail, which is for people.
const (
	// CodeNotFound (404): no job, workflow or batch has the ID, no
	// schedule the name, or no endpoint the path.
	CodeNotFound = "not_found"
	// CodeInvalidRequest (400): the body is not one JSON object in valid
	// UTF-8, has a member twice (names equal under case folding count as
	// one), has unknown or ill-typed fields, or a malformed time, duration
	// or ID.
	CodeInvalidRequest = "invalid_request"
	// CodeInvalidFilter (400): a filter, page or stats parameter is out
	// of range or unknown, or a bulk action's filter selects every job.
	CodeInvalidFilter = "invalid_filter"
	// CodeInvalidPayload (400): the payload is not one JSON value, holds a
	// NUL character or a member twice, or does not decode into the
	// arguments of the topic's worker (each member naming its field
	// exactly).
	CodeInvalidPayload = "invalid_payload"
	// CodePayloadTooLarge (413): the payload, or the whole body, is over
	// the client's limit.
	CodePayloadTooLarge = "payload_too_large"
	// CodeUnsupportedMediaType (415): a request body not sent as
	// application/json (parameters allowed; a charset must be UTF-8).
	CodeUnsupportedMediaType = "unsupported_media_type"
	// CodeUnknownTopic (400): the client has workers, none for the topic.
	CodeUnknownTopic = "unknown_topic"
	// CodeUnknownQueue (400): the client's Config.Queues has no such queue.
	CodeUnknownQueue = "unknown_queue"
	// CodeStatusConflict (409): the job's status does not allow the
	// action; the member "job_status" says what it is.
	CodeStatusConflict = "status_conflict"
	// CodeInvalidSchedule (400): a schedule that cannot be stored: an
	// invalid cron expression, an unknown time zone, or a name, topic,
	// payload, queue or option that is refused; the member "field" names
	// it.
	CodeInvalidSchedule = "invalid_schedule"
	// CodeDuplicateSchedule (409): another schedule has the name.
	CodeDuplicateSchedule = "duplicate_schedule"
	// CodeInvalidWorkflow (400): a workflow that cannot be enqueued: no
	// task, more than sluice.MaxGroupJobs, a task without a name or with
	// the name of another, a task after one that is not there, a cycle,
	// a task a job cannot be (a unique key, dependencies of its own); the
	// member "field" names it (tasks[3].after[0]). A task's job that
	// cannot be enqueued has the problem of POST api/jobs (unknown_topic,
	// invalid_payload ...) with field naming its member (tasks[3].payload).
	CodeInvalidWorkflow = "invalid_workflow"
	// CodeInvalidBatch (400): a batch that cannot be enqueued, or jobs
	// that cannot be added to one: no job (unless kept open), more than
	// sluice.MaxGroupJobs, a job with a unique key; field names it
	// (jobs[2]), as for workflows.
	CodeInvalidBatch = "invalid_batch"
	// CodeBatchClosed (409): jobs added to a batch that is closed.
	CodeBatchClosed = "batch_closed"
	// CodeUnauthorized (401): Options.Authorize returned ErrUnauthorized.
	CodeUnauthorized = "unauthorized"
	// CodeForbidden (403): Options.Authorize refused, or the topic is not
	// in Options.AllowedTopics.
	CodeForbidden = "forbidden"
	// CodeReadOnly (403): the handler is read-only.
	CodeReadOnly = "read_only"
	// CodeCrossOrigin (403): a browser's state-changing request from an
	// origin not trusted.
	CodeCrossOrigin = "cross_origin"
	// CodeMethodNotAllowed (405): the path has endpoints, none for the
	// method; the Allow header lists them.
	CodeMethodNotAllowed = "method_not_allowed"
	// CodeUnavailable (503): the handler was closed (event streams), or
	// the request ended before it was answered.
	CodeUnavailable = "unavailable"
	// CodeInvalidKey (400): the Sluice-Payload-Key header is not
	// "<key ID>:<key in base64>", or its key is not 16, 24 or 32 bytes.
	CodeInvalidKey = "invalid_key"
	// CodeUnknownKey (400): the job's payload is encrypted with another
	// key than the one given, or does not decrypt with it.
	CodeUnknownKey = "unknown_key"
	// CodeInternal (500): anything else, such as a database error; it is
	// logged.
	CodeInternal = "internal"
)

// problem is an RFC 9457 problem detail with the handler's extension
// members.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	Code   string `json:"code"`
	// Field names the request field or parameter at fault, if one is.
	Field string `json:"field,omitempty"`
	// JobStatus is, for a status conflict, the job's status.
	JobStatus sluice.JobStatus `json:"job_status,omitempty"`
}

// writeProblem writes p as application/problem+json.
func writeProblem(w http.ResponseWriter, p *problem) {
	p.Type = "about:blank"
	p.Title = http.StatusText(p.Status)
	body, _ := json.Marshal(p) // strings and numbers always encode
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(p.Status)
	_, _ = w.Write(body)
}

// writeJSON writes v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeProblem(w, &problem{Status: http.StatusInternalServerError, Code: CodeInternal, Detail: "encoding the response failed"})
		return
	}
	writeBody(w, status, body)
}

// writeBody writes body, JSON, with status.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// fail answers err, an error of the client, with its problem.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	writeProblem(w, h.problemOf(r, err))
}

// problemOf maps the client's typed errors to problems; any other error
// is logged and answered 500.
func (h *Handler) problemOf(r *http.Request, err error) *problem {
	if p := h.knownProblem(r, err); p != nil {
		return p
	}
	h.opts.Logger.Error("sluiceweb: request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	return &problem{Status: http.StatusInternalServerError, Code: CodeInternal, Detail: "internal error; see the server's log"}
}

// knownProblem returns the problem of one of the client's typed errors,
// nil for any other error.
func (h *Handler) knownProblem(r *http.Request, err error) *problem {
	var (
		scheduleErr *sluice.ScheduleError
		filterErr   *sluice.FilterError
		optionsErr  *sluice.OptionsError
		conflictErr *sluice.StatusConflictError
		topicErr    *sluice.UnknownTopicError
		argsErr     *sluice.ArgsError
		p           *problem
	)
	switch {
	case errors.As(err, &p):
		return p
	case errors.Is(err, sluice.ErrGroupClosed):
		return &problem{Status: http.StatusConflict, Code: CodeBatchClosed,
			Detail: "the batch is closed: it takes no more jobs (a batch takes them while kept open, until closed)"}
	case errors.Is(err, sluice.ErrNotFound):
		return &problem{Status: http.StatusNotFound, Code: CodeNotFound, Detail: "no job has this ID"}
	case errors.Is(err, sluice.ErrScheduleNotFound):
		return &problem{Status: http.StatusNotFound, Code: CodeNotFound, Detail: "no schedule has this name"}
	case errors.Is(err, sluice.ErrDuplicateSchedule):
		return &problem{Status: http.StatusConflict, Code: CodeDuplicateSchedule, Field: "name",
			Detail: "name: another schedule has it"}
	case errors.As(err, &scheduleErr):
		// Before the enqueue errors it may wrap: a schedule's problems
		// have one code.
		field := jsonName(scheduleErr.Field)
		return &problem{Status: http.StatusBadRequest, Code: CodeInvalidSchedule, Field: field,
			Detail: field + ": " + scheduleErr.Reason}
	case errors.As(err, &filterErr):
		return &problem{Status: http.StatusBadRequest, Code: CodeInvalidFilter, Field: jsonName(filterErr.Field),
			Detail: jsonName(filterErr.Field) + ": " + filterErr.Reason}
	case errors.As(err, &conflictErr):
		return &problem{Status: http.StatusConflict, Code: CodeStatusConflict, JobStatus: conflictErr.Status,
			Detail: "cannot " + conflictErr.Action + " the job: it is " + string(conflictErr.Status)}
	case errors.Is(err, sluice.ErrPayloadTooLarge):
		return &problem{Status: http.StatusRequestEntityTooLarge, Code: CodePayloadTooLarge, Field: "payload",
			Detail: fmt.Sprintf("payload: over the limit of %d bytes", h.c.MaxPayloadBytes())}
	case errors.As(err, &topicErr):
		return &problem{Status: http.StatusBadRequest, Code: CodeUnknownTopic, Field: "topic",
			Detail: fmt.Sprintf("topic: no worker for %q here; the topics worked here are %s", topicErr.Topic, quoteList(topicErr.Topics))}
	case errors.Is(err, sluice.ErrUnknownQueue):
		return &problem{Status: http.StatusBadRequest, Code: CodeUnknownQueue, Field: "queue", Detail: "queue: not a queue this client knows"}
	case errors.As(err, &argsErr):
		return &problem{Status: http.StatusBadRequest, Code: CodeInvalidPayload, Field: "payload", Detail: "payload: " + argsErr.Err.Error()}
	case errors.As(err, &optionsErr):
		return &problem{Status: http.StatusBadRequest, Code: CodeInvalidRequest, Field: jsonName(optionsErr.Field),
			Detail: jsonName(optionsErr.Field) + ": " + optionsErr.Reason}
	case errors.Is(err, sluice.ErrInvalidKey):
		return &problem{Status: http.StatusBadRequest, Code: CodeInvalidKey, Field: PayloadKeyHeader,
			Detail: PayloadKeyHeader + ": the key is not 16, 24 or 32 bytes, or its ID is not 1 to 64 letters, digits, or _ . : -"}
	case errors.Is(err, sluice.ErrUnknownKey), errors.Is(err, sluice.ErrDecrypt):
		return &problem{Status: http.StatusBadRequest, Code: CodeUnknownKey, Field: PayloadKeyHeader,
			Detail: PayloadKeyHeader + ": the payload is encrypted with another key, or does not decrypt with this one"}
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		return &problem{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Detail: "the request ended"}
	}
	return nil
}

// Error makes a problem an error, so that helpers can return it.
func (p *problem) Error() string { return p.Detail }

// badRequest returns the problem of an invalid field or parameter.
func badRequest(code, field, detail string) *problem {
	return &problem{Status: http.StatusBadRequest, Code: code, Field: field, Detail: field + ": " + detail}
}

// jsonName returns the request's name of a Go field name of the client's
// errors: "MaxRetries" becomes "max_retries", "Statuses[1]" "statuses[1]",
// `Keys["Acme"].RateLimit` `keys["Acme"].rate_limit` (what is within the
// brackets is kept as it is).
func jsonName(field string) string {
	switch field {
	case "JobFilter":
		return "filter"
	case "Scope":
		return "name" // the scope of limits is named by the path
	}
	var b strings.Builder
	for field != "" {
		i := strings.IndexByte(field, '[')
		if i < 0 {
			b.WriteString(snakeCase(field))
			break
		}
		b.WriteString(snakeCase(field[:i]))
		end := len(field) - 1 // an unclosed bracket: the rest as it is
		if q, err := strconv.QuotedPrefix(field[i+1:]); err == nil {
			if j := strings.IndexByte(field[i+1+len(q):], ']'); j >= 0 {
				end = i + 1 + len(q) + j
			}
		} else if j := strings.IndexByte(field[i:], ']'); j >= 0 {
			end = i + j
		}
		b.WriteString(field[i : end+1])
		field = field[end+1:]
	}
	return b.String()
}

// snakeCase returns a Go field name, or a path of them joined by dots, in
// snake case: "RatePeriod" is "rate_period", ".RateLimit" ".rate_limit",
// "GroupIDs" "group_ids" (a run of capitals is one word).
func snakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 && (s[i-1] >= 'a' && s[i-1] <= 'z' || s[i-1] >= '0' && s[i-1] <= '9') {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// quoteList returns the strings quoted and joined with commas.
func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}
