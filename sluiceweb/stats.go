package sluiceweb

import (
	"net/http"
	"sort"
	"time"

	"github.com/sluicehq/sluice"
)

// DefaultStatsBucket is the width of the points of GET api/jobs/stats'
// series when the request names none.
const DefaultStatsBucket = time.Minute

// StatsResponse is the answer of GET api/jobs/stats: the counts and
// outcomes of sluice.Stats, with durations in milliseconds and windows in
// seconds. The sluice command's stats --json and PocketBase's $jobs.stats
// answer in this shape too, made by NewStatsResponse. SuccessRate is null
// when nothing completed or failed in the window.
type StatsResponse struct {
	Total         int                                 `json:"total"`
	ByStatus      map[sluice.JobStatus]int            `json:"by_status"`
	ByTopic       map[string]map[sluice.JobStatus]int `json:"by_topic"`
	ByQueue       map[string]map[sluice.JobStatus]int `json:"by_queue"`
	WindowSeconds float64                             `json:"window_seconds"`
	Completed     int                                 `json:"completed"`
	Failed        int                                 `json:"failed"`
	SuccessRate   *float64                            `json:"success_rate"`
	AvgDurationMS float64                             `json:"avg_duration_ms"`
	P95DurationMS float64                             `json:"p95_duration_ms"`
	BucketSeconds float64                             `json:"bucket_seconds"`
	Series        []StatsPoint                        `json:"series"`
}

// StatsPoint is one bucket of StatsResponse.Series.
type StatsPoint struct {
	Start     time.Time `json:"start"`
	Completed int       `json:"completed"`
	Failed    int       `json:"failed"`
}

// NewStatsResponse returns st in the shape of GET api/jobs/stats; bucket
// is the width of the series' points that st was read with.
func NewStatsResponse(st *sluice.Stats, bucket time.Duration) *StatsResponse {
	res := &StatsResponse{Total: st.Total, ByStatus: st.ByStatus, ByTopic: st.ByTopic, ByQueue: st.ByQueue,
		WindowSeconds: st.Window.Seconds(), Completed: st.Completed, Failed: st.Failed, SuccessRate: st.SuccessRate,
		AvgDurationMS: ms(st.AvgDuration), P95DurationMS: ms(st.P95Duration), BucketSeconds: bucket.Seconds(),
		Series: make([]StatsPoint, len(st.Series))}
	for i, p := range st.Series {
		res.Series[i] = StatsPoint{Start: p.Start, Completed: p.Completed, Failed: p.Failed}
	}
	return res
}

// stats serves GET api/jobs/stats: counts by status, topic and queue, and
// the window's outcomes, also per bucket of time.
func (h *Handler) stats(w http.ResponseWriter, r *http.Request) {
	q, err := newQuery(r, "topics", "queues", "window", "bucket")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	f := &sluice.StatsFilter{Topics: q.list("topics"), Queues: q.list("queues")}
	if f.Window, err = q.duration("window", sluice.DefaultStatsWindow); err != nil {
		h.fail(w, r, err)
		return
	}
	if f.Bucket, err = q.duration("bucket", DefaultStatsBucket); err != nil {
		h.fail(w, r, err)
		return
	}
	if !h.authorize(w, r, scoped(ActionRead, "stats", f.Topics)) {
		return
	}
	st, err := h.c.Stats(r.Context(), f)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, NewStatsResponse(st, f.Bucket))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// liveWithin is how recently a client must have recorded itself to count
// as online: several heartbeats at the default interval.
const liveWithin = time.Minute

// queueJSON is one queue of GET api/queues.
type queueJSON struct {
	Name   string                   `json:"name"`
	Counts map[sluice.JobStatus]int `json:"counts"`
	Total  int                      `json:"total"`
	// Clients is how many clients online work the queue, and Workers how
	// many of its jobs they work at once in all.
	Clients int `json:"clients"`
	Workers int `json:"workers"`
	// Paused, MaxRunning and the rate limit are its stored flow control
	// (see sluice.QueueState).
	Paused            bool    `json:"paused"`
	MaxRunning        int     `json:"max_running,omitempty"`
	RateLimit         int     `json:"rate_limit,omitempty"`
	RatePeriodSeconds float64 `json:"rate_period_seconds,omitempty"`
}

// itemsResponse answers with a list.
type itemsResponse[T any] struct {
	Items []T `json:"items"`
}

// queues serves GET api/queues: each queue's jobs by status, the clients
// online that work it, and its flow control.
func (h *Handler) queues(w http.ResponseWriter, r *http.Request) {
	if !h.readAll(w, r, "queues") {
		return
	}
	st, err := h.c.Stats(r.Context(), nil)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	clients, err := h.c.Clients(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	byName := map[string]*queueJSON{}
	get := func(name string) *queueJSON {
		if byName[name] == nil {
			byName[name] = &queueJSON{Name: name, Counts: map[sluice.JobStatus]int{}}
		}
		return byName[name]
	}
	for name, counts := range st.ByQueue {
		q := get(name)
		for status, n := range counts {
			q.Counts[status] = n
			q.Total += n
		}
	}
	states, err := h.c.QueueStates(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	for _, s := range states {
		q := get(s.Queue)
		q.Paused, q.MaxRunning, q.RateLimit, q.RatePeriodSeconds = s.Paused, s.MaxRunning, s.RateLimit, s.RatePeriod.Seconds()
	}
	for _, c := range clients {
		if time.Since(c.SeenAt) > liveWithin {
			continue
		}
		for _, name := range c.Queues {
			q := get(name)
			q.Clients++
			q.Workers += c.MaxWorkers[name]
		}
	}
	names := make([]string, 0, len(byName))
	for name := range byName {
		names = append(names, name)
	}
	sort.Strings(names)
	res := itemsResponse[*queueJSON]{Items: make([]*queueJSON, len(names))}
	for i, name := range names {
		res.Items[i] = byName[name]
	}
	writeJSON(w, http.StatusOK, res)
}

// readAll checks a request for a read of every topic, named name, that
// takes no parameters; it writes the problem and returns false if the
// request may not go on.
func (h *Handler) readAll(w http.ResponseWriter, r *http.Request, name string) bool {
	if _, err := newQuery(r); err != nil {
		h.fail(w, r, err)
		return false
	}
	return h.authorize(w, r, scoped(ActionRead, name, nil))
}

// clientJSON is one client of GET api/clients.
type clientJSON struct {
	*sluice.ClientInfo
	// Online is true when the client recorded itself within the last
	// minute.
	Online bool `json:"online"`
}

// clients serves GET api/clients: the clients recorded in the database,
// sorted by ID.
func (h *Handler) clients(w http.ResponseWriter, r *http.Request) {
	if !h.readAll(w, r, "clients") {
		return
	}
	infos, err := h.c.Clients(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	res := itemsResponse[clientJSON]{Items: make([]clientJSON, len(infos))}
	for i, c := range infos {
		if c.Topics == nil {
			c.Topics = []string{}
		}
		if c.Queues == nil {
			c.Queues = []string{}
		}
		res.Items[i] = clientJSON{ClientInfo: c, Online: time.Since(c.SeenAt) <= liveWithin}
	}
	writeJSON(w, http.StatusOK, res)
}

// QueueStateResponse is a queue's stored flow control as the API answers
// it (POST api/queues/{name}/pause and resume), and as `sluice queue
// --json` prints it.
type QueueStateResponse struct {
	// Queue is the queue's name.
	Queue string `json:"queue"`
	// Paused, MaxRunning, RateLimit and RatePeriodSeconds are
	// sluice.QueueState's, the period in seconds.
	Paused            bool    `json:"paused"`
	MaxRunning        int     `json:"max_running,omitempty"`
	RateLimit         int     `json:"rate_limit,omitempty"`
	RatePeriodSeconds float64 `json:"rate_period_seconds,omitempty"`
	// UpdatedAt is when the state was last changed.
	UpdatedAt time.Time `json:"updated_at"`
}

// NewQueueStateResponse returns s as the API answers it.
func NewQueueStateResponse(s *sluice.QueueState) QueueStateResponse {
	return QueueStateResponse{Queue: s.Queue, Paused: s.Paused, MaxRunning: s.MaxRunning,
		RateLimit: s.RateLimit, RatePeriodSeconds: s.RatePeriod.Seconds(), UpdatedAt: s.UpdatedAt}
}

// pauseQueue serves POST api/queues/{name}/pause (pause true) and
// resume: the queue's state after the change, which every client on the
// database obeys from its next claim.
func (h *Handler) pauseQueue(pause bool) http.HandlerFunc {
	name, set := "resume_queue", h.c.ResumeQueue
	if pause {
		name, set = "pause_queue", h.c.PauseQueue
	}
	return func(w http.ResponseWriter, r *http.Request) {
		queue := r.PathValue("name")
		if !h.authorize(w, r, Action{Kind: ActionManage, Name: name, AllTopics: true, Queue: queue}) {
			return
		}
		s, err := set(r.Context(), queue)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, NewQueueStateResponse(s))
	}
}
