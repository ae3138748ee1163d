package sluiceweb

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice"
)

// enqueueRequest is the body of POST api/jobs.
type enqueueRequest struct {
	Topic   string          `json:"topic"`
	Payload json.RawMessage `json:"payload"`
	// RunAt (RFC 3339) or Delay (a Go duration) delay the job.
	RunAt string `json:"run_at"`
	Delay string `json:"delay"`
	Queue string `json:"queue"`
	// Priority orders jobs within a queue: smaller first.
	Priority int `json:"priority"`
	// MaxRetries is the retries after the first attempt: absent means the
	// default, 0 none.
	MaxRetries *int   `json:"max_retries"`
	UniqueKey  string `json:"unique_key"`
	// Tags label the job; Metadata is a JSON object about it.
	Tags     []string        `json:"tags"`
	Metadata json.RawMessage `json:"metadata"`
	// DependsOn are the IDs of jobs it waits for, OnDependencyFailure
	// "cancel" (the default) or "run" (see sluice.EnqueueOptions).
	DependsOn           []string `json:"depends_on"`
	OnDependencyFailure string   `json:"on_dependency_failure"`
	// Key is the job's key (the customer, account or order its limits per
	// key count it under), Sequence "hold" or "continue" to put it in the
	// sequence of its key (see sluice.EnqueueOptions).
	Key      string `json:"key"`
	Sequence string `json:"sequence"`
}

// enqueueResponse answers POST api/jobs.
type enqueueResponse struct {
	Job       *sluice.JobRow `json:"job"`
	Duplicate bool           `json:"duplicate"`
}

// options returns the request's enqueue options, or a problem.
func (req *enqueueRequest) options() (*sluice.EnqueueOptions, error) {
	opts := &sluice.EnqueueOptions{Queue: req.Queue, Priority: req.Priority, UniqueKey: req.UniqueKey, Tags: req.Tags,
		DependsOn: req.DependsOn, OnDependencyFailure: sluice.DependencyPolicy(req.OnDependencyFailure),
		Key: req.Key, Sequence: sluice.SequencePolicy(req.Sequence)}
	meta, err := metadataObject(req.Metadata)
	if err != nil {
		return nil, err
	}
	opts.Metadata = meta
	switch {
	case req.RunAt != "" && req.Delay != "":
		return nil, badRequest(CodeInvalidRequest, "delay", "give run_at or delay, not both")
	case req.RunAt != "":
		t, err := parseTime(CodeInvalidRequest, "run_at", req.RunAt)
		if err != nil {
			return nil, err
		}
		opts.RunAt = t
	case req.Delay != "":
		d, err := parseDuration(CodeInvalidRequest, "delay", req.Delay)
		if err != nil {
			return nil, err
		}
		opts.RunAt = time.Now().Add(d)
	}
	if opts.MaxRetries, err = maxRetries(CodeInvalidRequest, req.MaxRetries); err != nil {
		return nil, err
	}
	return opts, nil
}

// maxRetries returns the sluice form of a request's max_retries: absent is
// the default (0), 0 none (sluice.NoRetries); code is the problem's for a
// negative one.
func maxRetries(code string, n *int) (int, error) {
	switch {
	case n == nil:
		return 0, nil
	case *n < 0:
		return 0, badRequest(code, "max_retries", "must not be negative (0 means no retries)")
	case *n == 0:
		return sluice.NoRetries, nil
	}
	return *n, nil
}

// enqueue serves POST api/jobs: a job by topic and JSON payload.
func (h *Handler) enqueue(w http.ResponseWriter, r *http.Request) {
	var req enqueueRequest
	body, err := h.decodeBody(w, r, &req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	args, opts, err := req.job()
	if err != nil {
		h.fail(w, r, err)
		return
	}
	a := Action{Kind: ActionEnqueue, Name: "enqueue", Topics: []string{req.Topic}, Payload: args.Payload, Body: body}
	if !h.authorize(w, r, a) {
		return
	}
	res, err := h.c.Enqueue(r.Context(), args, opts)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	status := http.StatusCreated
	if res.Duplicate {
		status = http.StatusOK
	}
	writeEnqueueResponse(w, status, enqueueResponse{Job: withoutLogs(res.Job)[0], Duplicate: res.Duplicate})
}

// job returns the request's job: its arguments, with the payload as it
// will be stored, and its options; or a problem.
func (req *enqueueRequest) job() (sluice.RawArgs, *sluice.EnqueueOptions, error) {
	opts, err := req.options()
	if err != nil {
		return sluice.RawArgs{}, nil, err
	}
	switch {
	case req.Topic == "":
		return sluice.RawArgs{}, nil, badRequest(CodeInvalidRequest, "topic", "required")
	case !utf8.ValidString(req.Topic) || strings.ContainsRune(req.Topic, 0):
		return sluice.RawArgs{}, nil, badRequest(CodeInvalidRequest, "topic", "must be UTF-8 without NUL characters")
	}
	args, err := storedArgs(req.Topic, req.Payload)
	if err != nil {
		return sluice.RawArgs{}, nil, err
	}
	return args, opts, nil
}

// storedArgs returns a job's arguments with the payload as the client
// stores it (compacted; {} for none or null), so that what is authorized
// is what is stored.
func storedArgs(topic string, payload json.RawMessage) (sluice.RawArgs, error) {
	if string(payload) == "null" {
		payload = nil // as if absent: {}
	}
	stored, err := json.Marshal(sluice.RawArgs{TopicName: topic, Payload: payload})
	if err != nil {
		return sluice.RawArgs{}, &sluice.ArgsError{Topic: topic, Err: err}
	}
	return sluice.RawArgs{TopicName: topic, Payload: stored}, nil
}

// jobResponse answers a request about one job.
type jobResponse struct {
	Job *sluice.JobRow `json:"job"`
}

// jobDetail is a job with its attempts and logs, as GET api/jobs/{id}
// answers.
type jobDetail struct {
	*sluice.JobRow
	History     []attemptJSON `json:"history"`
	Logs        []jobLogJSON  `json:"logs"`
	LogsDropped int           `json:"logs_dropped"`
}

// attemptJSON is one of a job's attempts (sluice.AttemptRecord).
type attemptJSON struct {
	Attempt   int       `json:"attempt"`
	StartedAt time.Time `json:"started_at,omitzero"`
	ClientID  string    `json:"client_id,omitempty"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	Error     string    `json:"error,omitempty"`
	Trace     string    `json:"trace,omitempty"`
}

// readJob reads the path's job for an action of kind named name, and
// authorizes it with the job's topic. It writes the problem and returns
// nil if the request may not go on.
func (h *Handler) readJob(w http.ResponseWriter, r *http.Request, kind ActionKind, name string) *sluice.JobRow {
	id, err := jobID(r)
	if err != nil {
		h.fail(w, r, err)
		return nil
	}
	job, err := h.c.Get(r.Context(), id)
	a := Action{Kind: kind, Name: name, JobID: id}
	if err == nil {
		a.Topics = []string{job.Topic}
	}
	if !h.authorize(w, r, a) {
		return nil
	}
	if err != nil {
		h.fail(w, r, err)
		return nil
	}
	return job
}

// get serves GET api/jobs/{id}: the job, its payload, result, progress,
// attempts and logs.
func (h *Handler) get(w http.ResponseWriter, r *http.Request) {
	job := h.readJob(w, r, ActionRead, "get")
	if job == nil {
		return
	}
	if r.Header.Get(PayloadKeyHeader) != "" {
		if job = h.decrypted(w, r, job.ID); job == nil {
			return
		}
	}
	d := jobDetail{JobRow: job, History: []attemptJSON{}, Logs: jobLogs(job), LogsDropped: job.LogsDropped}
	for _, a := range job.History() {
		d.History = append(d.History, attemptJSON{Attempt: a.Attempt, StartedAt: a.StartedAt, ClientID: a.ClientID,
			EndedAt: a.EndedAt, Error: a.Error, Trace: a.Trace})
	}
	writeJSON(w, http.StatusOK, d)
}

// PayloadKeyHeader is the request header of GET api/jobs/{id} that
// holds a key, "<key ID>:<key in standard base64>", to answer the job
// with its payload decrypted if that key encrypted it. Send it over TLS
// only; the handler never logs it.
const PayloadKeyHeader = "Sluice-Payload-Key"

// decrypted reads job id with its payload decrypted by the key of the
// request's PayloadKeyHeader, or writes the problem and returns nil.
func (h *Handler) decrypted(w http.ResponseWriter, r *http.Request, id string) *sluice.JobRow {
	keyID, b64, _ := strings.Cut(r.Header.Get(PayloadKeyHeader), ":")
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		key = nil // refused by GetDecrypted as a key of the wrong length
	}
	job, err := h.c.GetDecrypted(r.Context(), id, sluice.EncryptionKey{ID: keyID, Key: key})
	if err != nil {
		h.fail(w, r, err)
		return nil
	}
	w.Header().Set("Cache-Control", "no-store")
	return job
}

// explainResponse answers GET api/jobs/{id}/explain.
type explainResponse struct {
	Job    *sluice.JobRow       `json:"job"`
	Reason sluice.ExplainReason `json:"reason"`
	Text   string               `json:"text"`
	// Key is the job's key when the reason concerns it, Ahead the job
	// ahead of it in its sequence (see sluice.Explanation).
	Key   string `json:"key,omitempty"`
	Ahead string `json:"ahead,omitempty"`
}

// explain serves GET api/jobs/{id}/explain: what holds the job.
func (h *Handler) explain(w http.ResponseWriter, r *http.Request) {
	job := h.readJob(w, r, ActionRead, "explain")
	if job == nil {
		return
	}
	ex, err := h.c.Explain(r.Context(), job.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, explainResponse{Job: withoutLogs(ex.Job)[0], Reason: ex.Reason, Text: ex.Text,
		Key: ex.Key, Ahead: ex.Ahead})
}

// action is one of the operator's actions on jobs.
type action struct {
	name string
	one  func(c client, ctx context.Context, id string) (*sluice.JobRow, error)
	many func(c client, ctx context.Context, f *sluice.JobFilter) ([]*sluice.JobRow, error)
}

// actions are the actions served by POST api/jobs/{id}/<name> and POST
// api/jobs/<name>; deleteAction is also served by DELETE api/jobs/{id}.
var (
	actions = []action{
		{"cancel", client.Cancel, client.CancelMany},
		{"requeue", client.Requeue, client.RequeueMany},
		{"retry", client.RetryNow, client.RetryNowMany},
	}
	deleteAction = action{"delete", client.Delete, client.DeleteMany}
)

// actOne serves an action on the path's job.
func (h *Handler) actOne(a action) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		job := h.readJob(w, r, ActionManage, a.name)
		if job == nil {
			return
		}
		row, err := a.one(h.c, r.Context(), job.ID)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, jobResponse{Job: withoutLogs(row)[0]})
	}
}

// jobsResponse answers a bulk action: the jobs it changed.
type jobsResponse struct {
	Items []*sluice.JobRow `json:"items"`
	Count int              `json:"count"`
}

// actMany serves an action on every job the body's filter selects.
func (h *Handler) actMany(a action) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req filterRequest
		body, err := h.decodeBody(w, r, &req)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		f, err := req.jobFilter(CodeInvalidFilter)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		act := scoped(ActionManage, a.name, f.Topics)
		act.Body = body
		if !h.authorize(w, r, act) {
			return
		}
		rows, err := a.many(h.c, r.Context(), f)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		if rows == nil {
			rows = []*sluice.JobRow{}
		}
		writeJSON(w, http.StatusOK, jobsResponse{Items: withoutLogs(rows...), Count: len(rows)})
	}
}

// filterRequest is a job filter, as the body of a bulk action or the query
// of a list.
type filterRequest struct {
	Topics        []string `json:"topics"`
	Statuses      []string `json:"statuses"`
	Queues        []string `json:"queues"`
	UniqueKey     string   `json:"unique_key"`
	CreatedFrom   string   `json:"created_from"`
	CreatedBefore string   `json:"created_before"`
	RunAtFrom     string   `json:"run_at_from"`
	RunAtBefore   string   `json:"run_at_before"`
	// Tags selects jobs carrying all of them, or one with AnyTag;
	// Metadata jobs whose metadata has each key with the string value.
	Tags     []string          `json:"tags"`
	AnyTag   bool              `json:"any_tag"`
	Metadata map[string]string `json:"metadata"`
	// Keys selects jobs with one of these keys.
	Keys []string `json:"keys"`
	// GroupIDs selects the jobs of these workflows and batches.
	GroupIDs []string `json:"group_ids"`
	// Payload jobs whose payload holds each value, a JSON scalar, at its
	// path ("customer.id"); payloadQuery are those of a list's query.
	Payload      map[string]json.RawMessage `json:"payload"`
	payloadQuery map[string]string
}

// jobFilter returns the filter, or a problem with code for a malformed
// field.
func (req *filterRequest) jobFilter(code string) (*sluice.JobFilter, error) {
	ss, err := statuses("statuses", req.Statuses)
	if err != nil {
		return nil, err
	}
	if req.AnyTag && len(req.Tags) == 0 {
		return nil, badRequest(code, "any_tag", "needs tags to choose from")
	}
	f := &sluice.JobFilter{Topics: req.Topics, Statuses: ss, Queues: req.Queues, UniqueKey: req.UniqueKey,
		Tags: req.Tags, AnyTag: req.AnyTag, Metadata: req.Metadata, Keys: req.Keys, GroupIDs: req.GroupIDs,
		Payload: payloadConditions(req.payloadQuery, req.Payload)}
	for _, tf := range []struct {
		name string
		v    string
		t    *time.Time
	}{
		{"created_from", req.CreatedFrom, &f.CreatedFrom},
		{"created_before", req.CreatedBefore, &f.CreatedBefore},
		{"run_at_from", req.RunAtFrom, &f.RunAtFrom},
		{"run_at_before", req.RunAtBefore, &f.RunAtBefore},
	} {
		if tf.v == "" {
			continue
		}
		if *tf.t, err = parseTime(code, tf.name, tf.v); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// listResponse answers GET api/jobs.
type listResponse struct {
	Items      []*sluice.JobRow `json:"items"`
	Total      int              `json:"total"`
	NextCursor string           `json:"next_cursor,omitempty"`
}

// listParams are the query parameters of GET api/jobs.
// A name ending in a dot is a prefix: metadata.<key>.
var listParams = []string{"topics", "statuses", "queues", "unique_key", "created_from", "created_before",
	"run_at_from", "run_at_before", "tags", "any_tag", metadataPrefix, payloadPrefix, "keys", "group_ids", "limit", "offset", "cursor", "order"}

// list serves GET api/jobs: one page of the jobs a filter selects.
func (h *Handler) list(w http.ResponseWriter, r *http.Request) {
	f, err := listFilter(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if !h.authorize(w, r, scoped(ActionRead, "list", f.Topics)) {
		return
	}
	res, err := h.c.List(r.Context(), f)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, listResponse{Items: withoutLogs(res.Jobs...), Total: res.Total, NextCursor: res.NextCursor})
}

// listFilter reads the list filter of r's query.
func listFilter(r *http.Request) (*sluice.ListFilter, error) {
	q, err := newQuery(r, listParams...)
	if err != nil {
		return nil, err
	}
	req := filterRequest{Topics: q.list("topics"), Statuses: q.list("statuses"), Queues: q.list("queues"), Tags: q.list("tags"),
		Keys: q.list("keys"), GroupIDs: q.list("group_ids")}
	if req.AnyTag, err = q.bool("any_tag"); err != nil {
		return nil, err
	}
	if req.Metadata, err = q.prefixed(metadataPrefix); err != nil {
		return nil, err
	}
	if req.payloadQuery, err = q.prefixed(payloadPrefix); err != nil {
		return nil, err
	}
	for _, p := range []struct {
		name string
		v    *string
	}{
		{"unique_key", &req.UniqueKey}, {"created_from", &req.CreatedFrom}, {"created_before", &req.CreatedBefore},
		{"run_at_from", &req.RunAtFrom}, {"run_at_before", &req.RunAtBefore},
	} {
		if *p.v, err = q.one(p.name); err != nil {
			return nil, err
		}
	}
	jf, err := req.jobFilter(CodeInvalidFilter)
	if err != nil {
		return nil, err
	}
	f := &sluice.ListFilter{JobFilter: *jf}
	if f.Limit, err = q.int("limit", 0); err != nil {
		return nil, err
	}
	if f.Offset, err = q.int("offset", 0); err != nil {
		return nil, err
	}
	if f.Cursor, err = q.one("cursor"); err != nil {
		return nil, err
	}
	order, err := q.one("order")
	switch {
	case err != nil:
		return nil, err
	case order == "" || order == "oldest":
	case order == "newest":
		f.Order = sluice.NewestFirst
	default:
		return nil, badRequest(CodeInvalidFilter, "order", "must be oldest or newest, not "+order)
	}
	return f, nil
}
