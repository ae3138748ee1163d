package sluiceweb

import (
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/sluicehq/sluice"
)

// scheduleJSON is a stored schedule (sluice.Schedule) as answers show it.
// It says enabled where the Go type says Disabled, so that a schedule
// created without the member runs, and max_retries as an enqueue takes it:
// absent for the default, 0 for none.
type scheduleJSON struct {
	Name       string          `json:"name"`
	Cron       string          `json:"cron"`
	TimeZone   string          `json:"time_zone"`
	Topic      string          `json:"topic"`
	Payload    json.RawMessage `json:"payload"`
	Queue      string          `json:"queue"`
	Priority   int             `json:"priority"`
	MaxRetries *int            `json:"max_retries,omitempty"`
	Enabled    bool            `json:"enabled"`
	CatchUp    sluice.CatchUp  `json:"catch_up"`
	NextRunAt  time.Time       `json:"next_run_at,omitzero"`
	LastRunAt  time.Time       `json:"last_run_at,omitzero"`
	LastJobID  string          `json:"last_job_id,omitempty"`
	CreatedAt  time.Time       `json:"created_at"`
	UpdatedAt  time.Time       `json:"updated_at"`
}

// newScheduleJSON returns s as answers show it.
func newScheduleJSON(s *sluice.Schedule) *scheduleJSON {
	out := &scheduleJSON{Name: s.Name, Cron: s.Cron, TimeZone: s.TimeZone, Topic: s.Topic, Payload: s.Payload,
		Queue: s.Queue, Priority: s.Priority, Enabled: !s.Disabled, CatchUp: s.CatchUp, NextRunAt: s.NextRunAt,
		LastRunAt: s.LastRunAt, LastJobID: s.LastJobID, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
	if len(out.Payload) == 0 {
		out.Payload = json.RawMessage("{}")
	}
	switch {
	case s.MaxRetries == sluice.NoRetries:
		out.MaxRetries = new(int)
	case s.MaxRetries > 0:
		out.MaxRetries = &s.MaxRetries
	}
	return out
}

// scheduleRequest is the body of POST api/schedules and PUT
// api/schedules/{name}: a schedule's definition, every member but name,
// cron and topic optional.
type scheduleRequest struct {
	Name       string          `json:"name"`
	Cron       string          `json:"cron"`
	TimeZone   string          `json:"time_zone"`
	Topic      string          `json:"topic"`
	Payload    json.RawMessage `json:"payload"`
	Queue      string          `json:"queue"`
	Priority   int             `json:"priority"`
	MaxRetries *int            `json:"max_retries"`
	// Enabled is true when absent.
	Enabled *bool  `json:"enabled"`
	CatchUp string `json:"catch_up"`

	// The members the server computes, refused with a clear problem
	// rather than as unknown.
	NextRunAt json.RawMessage `json:"next_run_at"`
	LastRunAt json.RawMessage `json:"last_run_at"`
	LastJobID json.RawMessage `json:"last_job_id"`
	CreatedAt json.RawMessage `json:"created_at"`
	UpdatedAt json.RawMessage `json:"updated_at"`
}

// schedule returns the request's schedule, with its payload as it will
// be stored, or a problem.
func (req *scheduleRequest) schedule() (*sluice.Schedule, error) {
	for _, m := range []struct {
		name  string
		value json.RawMessage
	}{
		{"next_run_at", req.NextRunAt}, {"last_run_at", req.LastRunAt}, {"last_job_id", req.LastJobID},
		{"created_at", req.CreatedAt}, {"updated_at", req.UpdatedAt},
	} {
		if m.value != nil {
			return nil, badRequest(CodeInvalidRequest, m.name, "is computed by the server; leave it out")
		}
	}
	if req.Topic == "" {
		return nil, badRequest(CodeInvalidSchedule, "topic", "required")
	}
	retries, err := maxRetries(CodeInvalidSchedule, req.MaxRetries)
	if err != nil {
		return nil, err
	}
	args, err := storedArgs(req.Topic, req.Payload)
	if err != nil {
		return nil, err
	}
	return &sluice.Schedule{Name: req.Name, Cron: req.Cron, TimeZone: req.TimeZone, Topic: req.Topic, Payload: args.Payload,
		Queue: req.Queue, Priority: req.Priority, MaxRetries: retries, Disabled: req.Enabled != nil && !*req.Enabled,
		CatchUp: sluice.CatchUp(req.CatchUp)}, nil
}

// listSchedules serves GET api/schedules: the stored schedules, by name.
func (h *Handler) listSchedules(w http.ResponseWriter, r *http.Request) {
	if !h.readAll(w, r, "list_schedules") {
		return
	}
	all, err := h.c.ListSchedules(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	res := itemsResponse[*scheduleJSON]{Items: make([]*scheduleJSON, len(all))}
	for i, s := range all {
		res.Items[i] = newScheduleJSON(s)
	}
	writeJSON(w, http.StatusOK, res)
}

// createSchedule serves POST api/schedules: 201 with the schedule stored.
func (h *Handler) createSchedule(w http.ResponseWriter, r *http.Request) {
	var req scheduleRequest
	body, err := h.decodeBody(w, r, &req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	s, err := req.schedule()
	if err != nil {
		h.fail(w, r, err)
		return
	}
	a := Action{Kind: ActionManage, Name: "create_schedule", Topics: []string{s.Topic}, Schedule: s.Name,
		Payload: s.Payload, Body: body}
	if !h.authorize(w, r, a) || !h.mayEnqueue(w, s.Topic) {
		return
	}
	stored, err := h.c.CreateSchedule(r.Context(), s)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "schedules/"+url.PathEscape(stored.Name))
	writeJSON(w, http.StatusCreated, newScheduleJSON(stored))
}

// readSchedule reads the path's schedule for a, and authorizes a with the
// schedule's topic and the topics a names besides. It writes the problem
// and returns nil if the request may not go on.
func (h *Handler) readSchedule(w http.ResponseWriter, r *http.Request, a Action) *sluice.Schedule {
	s, err := h.c.GetSchedule(r.Context(), r.PathValue("name"))
	a.Schedule = r.PathValue("name")
	topics := a.Topics
	a.Topics = nil
	if err == nil {
		a.Topics = []string{s.Topic}
	}
	for _, t := range topics {
		if !contains(a.Topics, t) {
			a.Topics = append(a.Topics, t)
		}
	}
	if !h.authorize(w, r, a) {
		return nil
	}
	if err != nil {
		h.fail(w, r, err)
		return nil
	}
	return s
}

// getSchedule serves GET api/schedules/{name}.
func (h *Handler) getSchedule(w http.ResponseWriter, r *http.Request) {
	if s := h.readSchedule(w, r, Action{Kind: ActionRead, Name: "get_schedule"}); s != nil {
		writeJSON(w, http.StatusOK, newScheduleJSON(s))
	}
}

// updateSchedule serves PUT api/schedules/{name}: the body replaces the
// schedule's definition. Changing the topic needs the right to manage
// both topics.
func (h *Handler) updateSchedule(w http.ResponseWriter, r *http.Request) {
	var req scheduleRequest
	body, err := h.decodeBody(w, r, &req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	name := r.PathValue("name")
	if req.Name != "" && req.Name != name {
		h.fail(w, r, badRequest(CodeInvalidRequest, "name", "differs from the path's; a schedule cannot be renamed"))
		return
	}
	req.Name = name
	s, err := req.schedule()
	if err != nil {
		h.fail(w, r, err)
		return
	}
	a := Action{Kind: ActionManage, Name: "update_schedule", Topics: []string{s.Topic}, Payload: s.Payload, Body: body}
	if h.readSchedule(w, r, a) == nil || !h.mayEnqueue(w, s.Topic) {
		return
	}
	stored, err := h.c.UpdateSchedule(r.Context(), s)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newScheduleJSON(stored))
}

// deleteSchedule serves DELETE api/schedules/{name}: the schedule as it
// was. The jobs it enqueued stay.
func (h *Handler) deleteSchedule(w http.ResponseWriter, r *http.Request) {
	if h.readSchedule(w, r, Action{Kind: ActionManage, Name: "delete_schedule"}) == nil {
		return
	}
	s, err := h.c.DeleteSchedule(r.Context(), r.PathValue("name"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newScheduleJSON(s))
}
