package sluiceweb

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
)

// ActionKind is what a request asks to do: read, enqueue, or manage jobs
// and schedules.
type ActionKind string

// The kinds of actions Authorize is asked about.
const (
	// ActionRead reads jobs, stats, queues and their keys, limits,
	// clients, schedules, workflows, batches or the event stream.
	ActionRead ActionKind = "read"
	// ActionEnqueue enqueues a job, a workflow or a batch, or adds jobs
	// to a batch.
	ActionEnqueue ActionKind = "enqueue"
	// ActionManage changes jobs (cancel, requeue, retry now, delete),
	// schedules (create, update, delete), queues (pause, resume), the
	// limits of queues and topics, or workflows and batches (cancel,
	// retry, and close a batch).
	ActionManage ActionKind = "manage"
)

// Action is what a request asks to do, as Options.Authorize is told.
type Action struct {
	// Kind is read, enqueue or manage.
	Kind ActionKind
	// Name is the endpoint's operation: "enqueue", "get", "list",
	// "stats", "explain", "queues", "clients", "events", "cancel",
	// "requeue", "retry" or "delete" for jobs; "list_schedules",
	// "get_schedule", "create_schedule", "update_schedule" or
	// "delete_schedule" for schedules; "pause_queue", "resume_queue" or
	// "key_counts" (the keys of a queue's jobs) for queues; "limits",
	// "set_key_limits" or "set_topic_limits" for the limits of queues
	// and topics; "list_workflows", "enqueue_workflow", "get_workflow",
	// "cancel_workflow" or "retry_workflow" for workflows;
	// "list_batches", "enqueue_batch", "get_batch", "cancel_batch",
	// "retry_batch", "add_to_batch" or "close_batch" for batches.
	Name string
	// Topics are the topics concerned: the enqueued job's, the job's
	// acted on or read (none for a job that does not exist: the answer is
	// then 404 if Authorize allows), or those a list, stats, event stream
	// or bulk action filters by. For a schedule, the topic of the jobs it
	// enqueues: an update that changes it names the old and the new (none
	// for a schedule that does not exist). For the limits of a topic,
	// that topic. For a workflow or batch enqueued, the topics of its
	// jobs and callbacks; for jobs added to a batch, theirs; for a
	// workflow or batch read, cancelled, retried or closed, those of its
	// jobs and callbacks as read before the action (none when it does
	// not exist: the answer is then 404 if Authorize allows). Each topic
	// is named once. Empty when AllTopics.
	Topics []string
	// AllTopics is true when the request concerns jobs of every topic: a
	// list, stats, event stream or bulk action without a topic filter, the
	// queues and clients, which span topics (pausing or resuming a queue,
	// its keys and the limits of a queue too), the stored limits, the
	// list of schedules, and the lists of workflows and batches.
	AllTopics bool
	// JobID is the job of a one-job request (get, explain, cancel,
	// requeue, retry, delete); empty otherwise.
	JobID string
	// Schedule is the schedule's name of a one-schedule request (get,
	// create, update, delete); empty otherwise.
	Schedule string
	// Group is the workflow's or batch's ID of a request about one
	// (get, cancel, retry, add to or close a batch); empty otherwise.
	Group string
	// Queue is the queue paused or resumed, whose keys are read, or
	// whose key limits are set (with AllTopics, since a queue holds jobs
	// of any topic); empty otherwise.
	Queue string
	// Payload is, for an enqueue and for a schedule's create or update,
	// the job's payload exactly as the client will store it and its worker
	// decode it (compacted JSON; {} when the request has none; Postgres
	// keeps the same value as jsonb); nil otherwise. A workflow or batch
	// has its payloads in Jobs.
	Payload json.RawMessage
	// Jobs are, for a workflow or batch enqueued and for jobs added to a
	// batch, each job and callback as the client will store it, in the
	// order of the body (tasks or jobs first, then the callbacks on
	// success, on failure and on completion); nil otherwise.
	Jobs []ActionJob
	// Body is the request's body for the requests that have one (an
	// enqueue, a bulk action, a schedule's create or update, limits set,
	// a workflow or batch enqueued, jobs added to a batch), exactly as
	// the handler decoded it and the values it stores come from: one JSON
	// object in valid UTF-8 with no member twice at any depth (names
	// equal under encoding/json's case folding count as one). nil for
	// requests without a body. The request's own Body has been read: an
	// Authorize that looks at the body must look here.
	Body json.RawMessage
}

// ActionJob is one job of a workflow or batch enqueued, or of jobs added
// to a batch, as Options.Authorize is shown it (Action.Jobs).
type ActionJob struct {
	// Field is where the job is in the request's body: "tasks[3]",
	// "jobs[0]", "on_success[1]".
	Field string
	// Topic is its topic, Payload its payload exactly as the client will
	// store it (as Action.Payload is).
	Topic   string
	Payload json.RawMessage
}

// ErrUnauthorized, returned by Options.Authorize (wrapped or not), answers
// 401 with the code "unauthorized": the request did not say who it comes
// from, or not convincingly.
var ErrUnauthorized = errors.New("sluiceweb: unauthorized")

// UnauthorizedError is an error Options.Authorize can return to answer 401
// with a WWW-Authenticate challenge. It matches ErrUnauthorized.
type UnauthorizedError struct {
	// Challenge is the WWW-Authenticate header's value, e.g.
	// `Basic realm="sluice"`; none is sent when empty.
	Challenge string
}

// Error implements error.
func (e *UnauthorizedError) Error() string { return ErrUnauthorized.Error() }

// Is makes an UnauthorizedError match ErrUnauthorized.
func (e *UnauthorizedError) Is(target error) bool { return target == ErrUnauthorized }

// authorize checks a against the handler's options and its Authorize,
// writes the problem and returns false if the request may not go on.
func (h *Handler) authorize(w http.ResponseWriter, r *http.Request, a Action) bool {
	if h.opts.ReadOnly && a.Kind != ActionRead {
		writeProblem(w, &problem{Status: http.StatusForbidden, Code: CodeReadOnly,
			Detail: "this handler is read-only: it neither enqueues nor changes jobs, schedules, queues or limits"})
		return false
	}
	if err := h.opts.Authorize(r, a); err != nil {
		var ue *UnauthorizedError
		if errors.As(err, &ue) && ue.Challenge != "" {
			w.Header().Set("WWW-Authenticate", ue.Challenge)
		}
		if errors.Is(err, ErrUnauthorized) {
			writeProblem(w, &problem{Status: http.StatusUnauthorized, Code: CodeUnauthorized, Detail: err.Error()})
			return false
		}
		writeProblem(w, &problem{Status: http.StatusForbidden, Code: CodeForbidden, Detail: err.Error()})
		return false
	}
	if a.Kind == ActionEnqueue {
		// Every topic enqueued must be allowed: a workflow's or batch's
		// has several.
		for _, t := range a.Topics {
			if !h.mayEnqueue(w, t) {
				return false
			}
		}
	}
	return true
}

// mayEnqueue checks topics against Options.AllowedTopics: one of them
// must be allowed. It writes the problem and returns false if none is.
func (h *Handler) mayEnqueue(w http.ResponseWriter, topics ...string) bool {
	if h.allowed != nil && !slices.ContainsFunc(topics, func(t string) bool { return h.allowed[t] }) {
		writeProblem(w, &problem{Status: http.StatusForbidden, Code: CodeForbidden,
			Detail: "topic " + quoteList(topics) + " may not be enqueued here (Options.AllowedTopics)"})
		return false
	}
	return true
}

// scoped returns an action of kind on the given topics, every topic when
// there are none.
func scoped(kind ActionKind, name string, topics []string) Action {
	return Action{Kind: kind, Name: name, Topics: topics, AllTopics: len(topics) == 0}
}
