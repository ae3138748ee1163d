package sluiceweb

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/sluicehq/sluice"
)

// minGroupBodyLimit is the least a body enqueueing a workflow or batch
// may hold, whatever a job's body limit: its jobs are many.
const minGroupBodyLimit = 16 << 20

// groupBodyLimit is the most a body enqueueing a workflow or batch, or
// adding jobs to a batch, may hold: 16 MiB, or a job's body limit if
// more. Each job's payload is held to the client's limit all the same.
func (h *Handler) groupBodyLimit() int64 { return max(h.bodyLimit, minGroupBodyLimit) }

// callbacksRequest are the callbacks of a workflow or batch: jobs as POST
// api/jobs takes them, each decoded on its own (jobRequests) so that it
// is held to the exact names of its members.
type callbacksRequest struct {
	OnSuccess  []json.RawMessage `json:"on_success"`
	OnFailure  []json.RawMessage `json:"on_failure"`
	OnComplete []json.RawMessage `json:"on_complete"`
}

// workflowRequest is the body of POST api/workflows.
type workflowRequest struct {
	Name  string            `json:"name"`
	Tasks []json.RawMessage `json:"tasks"`
	callbacksRequest
}

// taskRequest is one of workflowRequest.Tasks: a job as POST api/jobs
// takes it, its name, and the names of the tasks it comes after.
type taskRequest struct {
	enqueueRequest
	Name  string   `json:"name"`
	After []string `json:"after"`
}

// batchRequest is the body of POST api/batches.
type batchRequest struct {
	Name string            `json:"name"`
	Jobs []json.RawMessage `json:"jobs"`
	// KeepOpen lets jobs be added (POST api/batches/{id}/jobs) until the
	// batch is closed (POST api/batches/{id}/close).
	KeepOpen bool `json:"keep_open"`
	callbacksRequest
}

// addJobsRequest is the body of POST api/batches/{id}/jobs.
type addJobsRequest struct {
	Jobs []json.RawMessage `json:"jobs"`
}

// groupJob is one job of a request, decoded: what it enqueues and what
// Authorize is shown of it.
type groupJob struct {
	// part is the member of the body holding it (tasks, jobs,
	// on_success ...), field where it is there (tasks[3]).
	part, field string
	// task is a workflow's task's name.
	task string
	args sluice.RawArgs
	opts *sluice.EnqueueOptions
}

// groupJobs are the jobs of a request, with the topics Authorize is
// shown, each once.
type groupJobs struct {
	jobs   []groupJob
	topics []string
}

// add decodes raw, the job at field, into v, an enqueueRequest or a
// struct embedding one, and adds it; or returns a problem naming the
// member at fault within field.
func (g *groupJobs) add(part string, i int, raw json.RawMessage, v interface{ request() *enqueueRequest }) error {
	field := fmt.Sprintf("%s[%d]", part, i)
	if err := decodeObject(field, raw, v); err != nil {
		return err
	}
	args, opts, err := v.request().job()
	if err != nil {
		return within(field, err)
	}
	g.jobs = append(g.jobs, groupJob{part: part, field: field, args: args, opts: opts})
	if !contains(g.topics, args.TopicName) {
		g.topics = append(g.topics, args.TopicName)
	}
	return nil
}

// request returns req: the job of a struct that embeds it.
func (req *enqueueRequest) request() *enqueueRequest { return req }

// addJobs decodes the jobs of list, the member named name, each as POST
// api/jobs takes a job.
func (g *groupJobs) addJobs(name string, list []json.RawMessage) error {
	for i, raw := range list {
		if err := g.add(name, i, raw, &enqueueRequest{}); err != nil {
			return err
		}
	}
	return nil
}

// addCallbacks decodes the callbacks of cb, and returns the number of
// jobs before them.
func (g *groupJobs) addCallbacks(cb *callbacksRequest) (int, error) {
	n := len(g.jobs)
	for _, part := range []struct {
		name string
		list []json.RawMessage
	}{{"on_success", cb.OnSuccess}, {"on_failure", cb.OnFailure}, {"on_complete", cb.OnComplete}} {
		if err := g.addJobs(part.name, part.list); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// callbacks adds the callbacks, the jobs of g from first on, to a
// workflow's or batch's builder.
func (g *groupJobs) callbacks(first int, onSuccess, onFailure, onComplete func(sluice.JobArgs, *sluice.EnqueueOptions)) {
	for _, j := range g.jobs[first:] {
		switch j.part {
		case "on_success":
			onSuccess(j.args, j.opts)
		case "on_failure":
			onFailure(j.args, j.opts)
		default:
			onComplete(j.args, j.opts)
		}
	}
}

// action returns the action of a request enqueueing g's jobs.
func (g *groupJobs) action(name string, body []byte) Action {
	a := Action{Kind: ActionEnqueue, Name: name, Topics: g.topics, Body: body, Jobs: make([]ActionJob, len(g.jobs))}
	for i, j := range g.jobs {
		a.Jobs[i] = ActionJob{Field: j.field, Topic: j.args.TopicName, Payload: j.args.Payload}
	}
	return a
}

// within returns err, a problem about a member of a job, naming that
// member within field: "queue" becomes "tasks[3].queue", and a problem
// naming none names field. Any other error is returned as it is.
func within(field string, err error) error {
	var p *problem
	if field == "" || !errors.As(err, &p) {
		return err
	}
	q := *p
	if q.Field == "" {
		q.Field, q.Detail = field, field+": "+q.Detail
	} else {
		q.Field, q.Detail = field+"."+q.Field, field+"."+q.Detail
	}
	return &q
}

// groupName checks the name of a workflow or batch.
func groupName(code, name string) error {
	if !utf8.ValidString(name) || strings.ContainsRune(name, 0) {
		return badRequest(code, "name", "must be UTF-8 without NUL characters")
	}
	return nil
}

// jobCount checks how many jobs the member name holds: at least one
// unless empty is allowed, at most sluice.MaxGroupJobs.
func jobCount(code, name string, n int, empty bool) error {
	switch {
	case n == 0 && !empty:
		return badRequest(code, name, "required: give at least one")
	case n > sluice.MaxGroupJobs:
		return badRequest(code, name, fmt.Sprintf("%d given, more than %d", n, sluice.MaxGroupJobs))
	}
	return nil
}

// workflow returns the workflow of the request and its jobs, or a problem
// naming the member at fault.
func (req *workflowRequest) workflow() (*sluice.Workflow, *groupJobs, error) {
	if err := groupName(CodeInvalidWorkflow, req.Name); err != nil {
		return nil, nil, err
	}
	if err := jobCount(CodeInvalidWorkflow, "tasks", len(req.Tasks), false); err != nil {
		return nil, nil, err
	}
	g := &groupJobs{}
	tasks := make([]taskRequest, len(req.Tasks))
	index := make(map[string]int, len(req.Tasks))
	for i, raw := range req.Tasks {
		field := fmt.Sprintf("tasks[%d]", i)
		t := &tasks[i]
		if err := g.add("tasks", i, raw, t); err != nil {
			return nil, nil, err
		}
		switch j, dup := index[t.Name]; {
		case t.Name == "":
			return nil, nil, badRequest(CodeInvalidWorkflow, field+".name", "required")
		case strings.ContainsRune(t.Name, 0):
			return nil, nil, badRequest(CodeInvalidWorkflow, field+".name", "must not hold a NUL character")
		case dup:
			return nil, nil, badRequest(CodeInvalidWorkflow, field+".name", fmt.Sprintf("%q is the name of tasks[%d] too", t.Name, j))
		case len(t.After) > sluice.MaxDependencies:
			return nil, nil, badRequest(CodeInvalidWorkflow, field+".after",
				fmt.Sprintf("%d tasks, more than %d", len(t.After), sluice.MaxDependencies))
		}
		index[t.Name] = i
		g.jobs[i].task = t.Name
	}
	for i, t := range tasks {
		for k, a := range t.After {
			if _, ok := index[a]; !ok {
				return nil, nil, badRequest(CodeInvalidWorkflow, fmt.Sprintf("tasks[%d].after[%d]", i, k),
					fmt.Sprintf("%q is not the name of a task of the workflow", a))
			}
		}
	}
	first, err := g.addCallbacks(&req.callbacksRequest)
	if err != nil {
		return nil, nil, err
	}
	w := sluice.NewWorkflow(req.Name)
	for i, t := range tasks {
		w.Add(t.Name, g.jobs[i].args, g.jobs[i].opts, t.After...)
	}
	g.callbacks(first, func(a sluice.JobArgs, o *sluice.EnqueueOptions) { w.OnSuccess(a, o) },
		func(a sluice.JobArgs, o *sluice.EnqueueOptions) { w.OnFailure(a, o) },
		func(a sluice.JobArgs, o *sluice.EnqueueOptions) { w.OnComplete(a, o) })
	return w, g, nil
}

// batch returns the batch of the request and its jobs, or a problem
// naming the member at fault.
func (req *batchRequest) batch() (*sluice.Batch, *groupJobs, error) {
	if err := groupName(CodeInvalidBatch, req.Name); err != nil {
		return nil, nil, err
	}
	if err := jobCount(CodeInvalidBatch, "jobs", len(req.Jobs), req.KeepOpen); err != nil {
		return nil, nil, err
	}
	g := &groupJobs{}
	if err := g.addJobs("jobs", req.Jobs); err != nil {
		return nil, nil, err
	}
	first, err := g.addCallbacks(&req.callbacksRequest)
	if err != nil {
		return nil, nil, err
	}
	b := sluice.NewBatch(req.Name)
	for _, j := range g.jobs[:first] {
		b.Add(j.args, j.opts)
	}
	if req.KeepOpen {
		b.KeepOpen()
	}
	g.callbacks(first, func(a sluice.JobArgs, o *sluice.EnqueueOptions) { b.OnSuccess(a, o) },
		func(a sluice.JobArgs, o *sluice.EnqueueOptions) { b.OnFailure(a, o) },
		func(a sluice.JobArgs, o *sluice.EnqueueOptions) { b.OnComplete(a, o) })
	return b, g, nil
}

// groupProblem returns the problem of err, an error enqueueing a workflow
// or batch (code is the problem's code for the group's own faults): a
// *sluice.GroupError names the member at fault by its place (tasks[3],
// jobs[0], on_success[1]), within which a job's own problem names its
// member (tasks[3].queue). Any other error is returned as it is.
func (h *Handler) groupProblem(r *http.Request, code string, err error) error {
	var ge *sluice.GroupError
	if !errors.As(err, &ge) {
		return err
	}
	field := ""
	if ge.Part != "" {
		field = jsonName(fmt.Sprintf("%s[%d]", ge.Part, ge.Index))
	}
	if ge.Err != nil {
		if p := h.knownProblem(r, ge.Err); p != nil {
			return within(field, p)
		}
		return &problem{Status: http.StatusBadRequest, Code: code, Field: field, Detail: strings.TrimPrefix(field+": "+ge.Err.Error(), ": ")}
	}
	return &problem{Status: http.StatusBadRequest, Code: code, Field: field, Detail: strings.TrimPrefix(field+": "+ge.Reason, ": ")}
}

// enqueuedGroup answers the enqueue of a workflow or batch: its ID and
// its jobs as stored, in the order of the body.
type enqueuedGroup struct {
	ID   string           `json:"id"`
	Kind sluice.GroupKind `json:"kind"`
	Name string           `json:"name"`
	Jobs []*sluice.JobRow `json:"jobs"`
}

// enqueueWorkflow serves POST api/workflows: 201 with the workflow's ID
// and its tasks' jobs.
func (h *Handler) enqueueWorkflow(w http.ResponseWriter, r *http.Request) {
	var req workflowRequest
	body, err := decodeBodyUpTo(w, r, &req, h.groupBodyLimit())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	wf, jobs, err := req.workflow()
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if !h.authorize(w, r, jobs.action("enqueue_workflow", body)) {
		return
	}
	res, err := h.c.EnqueueWorkflow(r.Context(), wf)
	if err != nil {
		h.fail(w, r, h.groupProblem(r, CodeInvalidWorkflow, err))
		return
	}
	out := enqueuedGroup{ID: res.ID, Kind: sluice.KindWorkflow, Name: req.Name, Jobs: make([]*sluice.JobRow, len(req.Tasks))}
	for i, j := range jobs.jobs[:len(req.Tasks)] {
		out.Jobs[i] = res.Tasks[j.task]
	}
	w.Header().Set("Location", "workflows/"+res.ID)
	writeJSON(w, http.StatusCreated, out)
}

// enqueueBatch serves POST api/batches: 201 with the batch's ID and its
// jobs.
func (h *Handler) enqueueBatch(w http.ResponseWriter, r *http.Request) {
	var req batchRequest
	body, err := decodeBodyUpTo(w, r, &req, h.groupBodyLimit())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	b, jobs, err := req.batch()
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if !h.authorize(w, r, jobs.action("enqueue_batch", body)) {
		return
	}
	res, err := h.c.EnqueueBatch(r.Context(), b)
	if err != nil {
		h.fail(w, r, h.groupProblem(r, CodeInvalidBatch, err))
		return
	}
	w.Header().Set("Location", "batches/"+res.ID)
	writeJSON(w, http.StatusCreated, enqueuedGroup{ID: res.ID, Kind: sluice.KindBatch, Name: req.Name, Jobs: withoutLogs(res.Jobs...)})
}

// addToBatch serves POST api/batches/{id}/jobs: the body's jobs enqueued
// into the open batch, 201 with them.
func (h *Handler) addToBatch(w http.ResponseWriter, r *http.Request) {
	id, err := groupPathID(r, batches)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var req addJobsRequest
	body, err := decodeBodyUpTo(w, r, &req, h.groupBodyLimit())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	g := &groupJobs{}
	err = jobCount(CodeInvalidBatch, "jobs", len(req.Jobs), false)
	if err == nil {
		err = g.addJobs("jobs", req.Jobs)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	a := g.action("add_to_batch", body)
	a.Group = id
	if !h.authorize(w, r, a) {
		return
	}
	params := make([]sluice.EnqueueParams, len(g.jobs))
	for i, j := range g.jobs {
		params[i] = sluice.EnqueueParams{Args: j.args, Options: j.opts}
	}
	rows, err := h.c.AddToBatch(r.Context(), id, params...)
	if err != nil {
		h.fail(w, r, batches.notFound(h.groupProblem(r, CodeInvalidBatch, err)))
		return
	}
	writeJSON(w, http.StatusCreated, jobsResponse{Items: withoutLogs(rows...), Count: len(rows)})
}
