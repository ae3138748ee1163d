package sluiceweb

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/sluicehq/sluice"
)

// groupKind is what the routes of workflows or of batches need of the
// client: the same operations, for one kind of group each.
type groupKind struct {
	kind sluice.GroupKind
	// plural names the kind in paths and actions' names.
	plural string
	get    func(c client, ctx context.Context, id string) (*sluice.Group, error)
	list   func(c client, ctx context.Context, f *sluice.GroupFilter) (*sluice.GroupList, error)
	cancel func(c client, ctx context.Context, id string) ([]*sluice.JobRow, error)
	retry  func(c client, ctx context.Context, id string) ([]*sluice.JobRow, error)
}

var (
	workflows = &groupKind{sluice.KindWorkflow, "workflows", client.GetWorkflow, client.ListWorkflows,
		client.CancelWorkflow, client.RetryWorkflow}
	batches = &groupKind{sluice.KindBatch, "batches", client.GetBatch, client.ListBatches,
		client.CancelBatch, client.RetryBatch}
)

// groupRoutes registers the routes of workflows and batches with handle.
func (h *Handler) groupRoutes(handle func(pattern string, fn http.HandlerFunc)) {
	for _, k := range []*groupKind{workflows, batches} {
		handle("GET /api/"+k.plural, h.listGroups(k))
		handle("GET /api/"+k.plural+"/{id}", h.getGroup(k))
		handle("POST /api/"+k.plural+"/{id}/cancel", h.actOnGroup(k, "cancel", k.cancel))
		handle("POST /api/"+k.plural+"/{id}/retry", h.actOnGroup(k, "retry", k.retry))
	}
	handle("POST /api/workflows", h.enqueueWorkflow)
	handle("POST /api/batches", h.enqueueBatch)
	handle("POST /api/batches/{id}/jobs", h.addToBatch)
	handle("POST /api/batches/{id}/close", h.closeBatch)
}

// name is the action's name of op on this kind: "get_workflow",
// "cancel_batch".
func (k *groupKind) name(op string) string { return op + "_" + string(k.kind) }

// notFound returns err with ErrNotFound answered as no group of this kind
// having the ID.
func (k *groupKind) notFound(err error) error {
	if errors.Is(err, sluice.ErrNotFound) {
		return &problem{Status: http.StatusNotFound, Code: CodeNotFound, Detail: "no " + string(k.kind) + " has this ID"}
	}
	return err
}

// groupPathID returns the path's ID, or a problem if it is not a UUID.
func groupPathID(r *http.Request, k *groupKind) (string, error) {
	id := r.PathValue("id")
	if !isUUID(id) {
		return "", badRequest(CodeInvalidRequest, "id", fmt.Sprintf("%q is not a %s ID (a UUID)", id, k.kind))
	}
	return id, nil
}

// groupTopics returns the topics of g's jobs and callbacks, each once.
func groupTopics(g *sluice.Group) []string {
	seen := map[string]bool{}
	topics := []string{}
	add := func(t string) {
		if !seen[t] {
			seen[t] = true
			topics = append(topics, t)
		}
	}
	for _, j := range g.Jobs {
		add(j.Topic)
	}
	for _, cb := range g.Callbacks {
		add(cb.Topic)
	}
	return topics
}

// readGroup reads the path's group of kind k for an action of kind named
// op, and authorizes it with the topics of the group's jobs and
// callbacks. It writes the problem and returns nil if the request may not
// go on.
func (h *Handler) readGroup(w http.ResponseWriter, r *http.Request, k *groupKind, kind ActionKind, op string) *sluice.Group {
	id, err := groupPathID(r, k)
	if err != nil {
		h.fail(w, r, err)
		return nil
	}
	if _, err := newQuery(r); err != nil {
		h.fail(w, r, err)
		return nil
	}
	g, err := k.get(h.c, r.Context(), id)
	a := Action{Kind: kind, Name: k.name(op), Group: id}
	if err == nil {
		a.Topics = groupTopics(g)
	}
	if !h.authorize(w, r, a) {
		return nil
	}
	if err != nil {
		h.fail(w, r, k.notFound(err))
		return nil
	}
	return g
}

// groupDetail is a workflow or batch with its jobs and callbacks, as GET
// api/workflows/{id} and GET api/batches/{id} answer it.
type groupDetail struct {
	*sluice.Group
	Jobs      []*sluice.JobRow        `json:"jobs"`
	Callbacks []*sluice.GroupCallback `json:"callbacks"`
}

// newGroupDetail returns g as a one-group answer shows it: its jobs and
// callbacks' jobs without logs, lists empty rather than absent.
func newGroupDetail(g *sluice.Group) groupDetail {
	d := groupDetail{Group: g, Jobs: withoutLogs(g.Jobs...), Callbacks: g.Callbacks}
	if d.Jobs == nil {
		d.Jobs = []*sluice.JobRow{}
	}
	if d.Callbacks == nil {
		d.Callbacks = []*sluice.GroupCallback{}
	}
	for _, cb := range d.Callbacks {
		withoutLogs(cb.Job)
	}
	return d
}

// getGroup serves GET api/workflows/{id} and GET api/batches/{id}.
func (h *Handler) getGroup(k *groupKind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if g := h.readGroup(w, r, k, ActionRead, "get"); g != nil {
			writeJSON(w, http.StatusOK, newGroupDetail(g))
		}
	}
}

// actOnGroup serves POST api/{workflows,batches}/{id}/{cancel,retry}: the
// jobs the action changed.
func (h *Handler) actOnGroup(k *groupKind, op string,
	act func(c client, ctx context.Context, id string) ([]*sluice.JobRow, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		g := h.readGroup(w, r, k, ActionManage, op)
		if g == nil {
			return
		}
		rows, err := act(h.c, r.Context(), g.ID)
		if err != nil {
			h.fail(w, r, k.notFound(err))
			return
		}
		if rows == nil {
			rows = []*sluice.JobRow{}
		}
		writeJSON(w, http.StatusOK, jobsResponse{Items: withoutLogs(rows...), Count: len(rows)})
	}
}

// closeBatch serves POST api/batches/{id}/close: the batch as it is once
// closed.
func (h *Handler) closeBatch(w http.ResponseWriter, r *http.Request) {
	g := h.readGroup(w, r, batches, ActionManage, "close")
	if g == nil {
		return
	}
	closed, err := h.c.CloseBatch(r.Context(), g.ID)
	if err != nil {
		h.fail(w, r, batches.notFound(err))
		return
	}
	writeJSON(w, http.StatusOK, newGroupDetail(closed))
}

// listGroups serves GET api/workflows and GET api/batches: one page of
// the groups the query selects, newest first.
func (h *Handler) listGroups(k *groupKind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f, err := groupFilter(r)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		if !h.authorize(w, r, scoped(ActionRead, "list_"+k.plural, nil)) {
			return
		}
		list, err := k.list(h.c, r.Context(), f)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, list)
	}
}

// groupFilter reads the filter of GET api/workflows and GET api/batches.
func groupFilter(r *http.Request) (*sluice.GroupFilter, error) {
	q, err := newQuery(r, "name", "statuses", "created_from", "created_before", "limit", "cursor")
	if err != nil {
		return nil, err
	}
	f := &sluice.GroupFilter{}
	if f.Name, err = q.one("name"); err != nil {
		return nil, err
	}
	for _, s := range q.list("statuses") {
		f.Statuses = append(f.Statuses, sluice.GroupStatus(s))
	}
	if f.CreatedFrom, err = q.time("created_from"); err != nil {
		return nil, err
	}
	if f.CreatedBefore, err = q.time("created_before"); err != nil {
		return nil, err
	}
	if f.Limit, err = q.int("limit", 0); err != nil {
		return nil, err
	}
	if f.Cursor, err = q.one("cursor"); err != nil {
		return nil, err
	}
	if f.Cursor != "" && !isUUID(f.Cursor) {
		return nil, badRequest(CodeInvalidFilter, "cursor", fmt.Sprintf("%q is not the next_cursor of a page", f.Cursor))
	}
	return f, nil
}
