package sluiceweb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice"
)

// ErrInvalidOptions is returned by New for Options it cannot build a
// handler with. The error is an *OptionsError.
var ErrInvalidOptions = errors.New("sluiceweb: invalid options")

// OptionsError names the Options field New rejected and why. It matches
// ErrInvalidOptions.
type OptionsError struct {
	// Field is the rejected field, e.g. "Authorize".
	Field string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *OptionsError) Error() string {
	return fmt.Sprintf("sluiceweb: invalid options: %s: %s", e.Field, e.Reason)
}

// Is makes an OptionsError match ErrInvalidOptions.
func (e *OptionsError) Is(target error) bool { return target == ErrInvalidOptions }

// DefaultHeartbeat is how often an event stream sends a comment when it has
// nothing else to send, so that proxies keep it open.
const DefaultHeartbeat = 15 * time.Second

// Options configure the handler New returns. Authorize is required.
type Options struct {
	// Authorize decides whether a request may do what it asks (see
	// Action); it is called for every API request but the OpenAPI
	// document, after the request is parsed and before anything is read
	// or written. A nil error allows; an error matching ErrUnauthorized
	// answers 401 (an *UnauthorizedError can name the WWW-Authenticate
	// challenge), any other error 403 with the code "forbidden"; the
	// error's message is the problem's detail. New refuses a nil
	// Authorize: pass AllowAll to serve without access control, for
	// example behind a proxy that authenticates.
	Authorize func(r *http.Request, a Action) error

	// AllowedTopics, when not empty, are the only topics that may be
	// enqueued, or be the topic of a schedule created or replaced; others
	// are refused with 403 and the code "forbidden". Empty allows every
	// topic (the client may still refuse a topic it has no worker for).
	AllowedTopics []string

	// ReadOnly refuses every request that enqueues, or changes jobs,
	// schedules, queues or limits, with 403 and the code "read_only",
	// whatever Authorize says.
	ReadOnly bool

	// TrustedOrigins are origins ("https://admin.example.com") whose
	// browsers may send state-changing requests across origins. Every
	// other cross-origin POST or DELETE from a browser is refused with
	// 403 and the code "cross_origin" (net/http.CrossOriginProtection):
	// list here the origin of a dashboard served from another host.
	TrustedOrigins []string

	// Heartbeat is how often an event stream sends a comment when idle.
	// Default DefaultHeartbeat.
	Heartbeat time.Duration

	// StreamBuffer is how many events an event stream holds for a reader
	// that reads slower than they come. When more are waiting, the stream
	// drops them and sends a reset event, so that the reader refetches
	// what it shows, and the other streams and the client's work never
	// wait for it. Default DefaultStreamBuffer.
	StreamBuffer int

	// StreamRate is how many events a second an event stream sends at
	// most, on average, in bursts of up to a second's worth: when jobs change
	// faster, it sends a reset instead, so that open streams cost the
	// process a bounded share of its time however busy the queue.
	// Default DefaultStreamRate; negative for no limit.
	StreamRate int

	// Logger receives the errors the handler answers 500 for. Default
	// slog.Default().
	Logger *slog.Logger
}

// AllowAll is an Authorize function that allows every request: for a
// handler reachable only by those who may do everything, such as one
// behind an authenticating proxy, or on a loopback address.
func AllowAll(*http.Request, Action) error { return nil }

// Handler serves the sluice API (under api/), its event stream and the
// dashboard. Create it with New; it is safe for concurrent use.
type Handler struct {
	c       client
	opts    Options
	allowed map[string]bool
	mux     *http.ServeMux
	root    http.Handler
	// patterns are the API's routes, as registered.
	patterns []string
	// bodyLimit is the largest request body read.
	bodyLimit int64
	// closing is closed by Close; it ends the event streams.
	closing   chan struct{}
	closeOnce sync.Once
	streams   *streams
	ui        *uiFiles
}

// New returns a handler serving client's jobs over HTTP: a JSON API under
// api/ (described by api/openapi.json), an event stream at api/events, and
// the dashboard at the root. It can be mounted under any prefix with
// http.StripPrefix:
//
//	mux.Handle("/sluice/", http.StripPrefix("/sluice", h))
//
// Give it an insert-only client (one without workers) to enqueue topics
// this process does not work: a client with workers refuses topics it has
// no worker for (see sluice.RawArgs). opts.Authorize is required; New
// returns an error matching ErrInvalidOptions without it, or for a
// malformed trusted origin.
//
// Event streams last until their client goes away: http.Server.Shutdown
// does not end them. Call Close to end them, for example with
// srv.RegisterOnShutdown(h.Close).
func New[TTx any](client *sluice.Client[TTx], opts *Options) (*Handler, error) {
	if client == nil {
		return nil, &OptionsError{Field: "client", Reason: "must not be nil"}
	}
	if opts == nil || opts.Authorize == nil {
		return nil, &OptionsError{Field: "Authorize", Reason: "is required: pass sluiceweb.AllowAll to serve without access control"}
	}
	h := &Handler{c: client, opts: *opts, closing: make(chan struct{})}
	if h.opts.Heartbeat <= 0 {
		h.opts.Heartbeat = DefaultHeartbeat
	}
	if h.opts.Logger == nil {
		h.opts.Logger = slog.Default()
	}
	if h.opts.StreamBuffer <= 0 {
		h.opts.StreamBuffer = DefaultStreamBuffer
	}
	if h.opts.StreamRate == 0 {
		h.opts.StreamRate = DefaultStreamRate
	}
	h.streams = newStreams(client, h.opts.Logger, h.opts.StreamBuffer, h.opts.StreamRate)
	for i, t := range opts.AllowedTopics {
		if t == "" {
			return nil, &OptionsError{Field: fmt.Sprintf("AllowedTopics[%d]", i), Reason: "empty"}
		}
		if h.allowed == nil {
			h.allowed = make(map[string]bool)
		}
		h.allowed[t] = true
	}
	h.bodyLimit = int64(client.MaxPayloadBytes()) + envelopeBytes
	cop := http.NewCrossOriginProtection()
	for i, o := range opts.TrustedOrigins {
		if err := cop.AddTrustedOrigin(o); err != nil {
			return nil, &OptionsError{Field: fmt.Sprintf("TrustedOrigins[%d]", i), Reason: err.Error()}
		}
	}
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, &problem{Status: http.StatusForbidden, Code: CodeCrossOrigin,
			Detail: "cross-origin request refused: list the dashboard's origin in Options.TrustedOrigins"})
	}))
	ui, err := sharedUIFiles()
	if err != nil {
		return nil, fmt.Errorf("sluiceweb: %w", err)
	}
	h.ui = ui
	h.mux = h.routes()
	h.root = cop.Handler(h.mux)
	return h, nil
}

// envelopeBytes is what a request body may hold besides a job's payload.
const envelopeBytes = 64 << 10

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if !strings.HasPrefix(r.URL.Path, "/") {
		// Mounted with http.StripPrefix("/prefix/", ...): give the path
		// back its slash.
		r2 := new(http.Request)
		*r2 = *r
		u := *r.URL
		u.Path = "/" + u.Path
		u.RawPath = ""
		r2.URL = &u
		r = r2
	}
	h.root.ServeHTTP(w, r)
}

// Close ends the handler's event streams, and refuses new ones with 503;
// the rest of the API keeps working. It is idempotent.
func (h *Handler) Close() {
	h.closeOnce.Do(func() {
		close(h.closing)
		h.streams.close()
	})
}

// routes returns the handler's routes, and records their patterns.
func (h *Handler) routes() *http.ServeMux {
	mux := http.NewServeMux()
	handle := func(pattern string, fn http.HandlerFunc) {
		mux.HandleFunc(pattern, fn)
		h.patterns = append(h.patterns, pattern)
	}
	handle("POST /api/jobs", h.enqueue)
	handle("POST /api/jobs/enqueue", h.enqueue)
	handle("GET /api/jobs", h.list)
	handle("GET /api/jobs/stats", h.stats)
	handle("GET /api/jobs/{id}", h.get)
	handle("GET /api/jobs/{id}/explain", h.explain)
	for _, a := range actions {
		handle("POST /api/jobs/{id}/"+a.name, h.actOne(a))
		handle("POST /api/jobs/"+a.name, h.actMany(a))
	}
	handle("DELETE /api/jobs/{id}", h.actOne(deleteAction))
	handle("POST /api/jobs/delete", h.actMany(deleteAction))
	handle("GET /api/queues", h.queues)
	handle("POST /api/queues/{name}/pause", h.pauseQueue(true))
	handle("POST /api/queues/{name}/resume", h.pauseQueue(false))
	handle("GET /api/queues/{name}/keys", h.keyCounts)
	handle("GET /api/limits", h.limits)
	handle("PUT /api/limits/{kind}/{name}/keys", h.setKeyLimits)
	handle("PUT /api/limits/topic/{name}", h.setTopicLimits)
	handle("GET /api/clients", h.clients)
	handle("GET /api/settings", h.settings)
	handle("GET /api/metrics", h.metrics)
	handle("GET /api/schedules", h.listSchedules)
	handle("POST /api/schedules", h.createSchedule)
	handle("GET /api/schedules/{name}", h.getSchedule)
	handle("PUT /api/schedules/{name}", h.updateSchedule)
	handle("DELETE /api/schedules/{name}", h.deleteSchedule)
	h.groupRoutes(handle)
	handle("GET /api/events", h.events)
	handle("GET /api/openapi.json", serveOpenAPI)
	mux.HandleFunc("/api/", h.noRoute)
	mux.Handle("/", h.ui)
	return mux
}

// noRoute answers a path under api/ that no route serves: 405 if another
// method has a route there, 404 otherwise.
func (h *Handler) noRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := h.mux.Handler(probe); pattern != "/api/" && pattern != "" {
			allow = append(allow, m)
			if m == http.MethodGet {
				allow = append(allow, http.MethodHead)
			}
		}
	}
	if len(allow) == 0 {
		writeProblem(w, &problem{Status: http.StatusNotFound, Code: CodeNotFound, Detail: "no API endpoint at " + r.URL.Path})
		return
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	writeProblem(w, &problem{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed,
		Detail: fmt.Sprintf("%s is not allowed here; allowed: %s", r.Method, strings.Join(allow, ", "))})
}

// client is what the handler uses of a *sluice.Client, whatever its
// transaction type.
type client interface {
	Enqueue(ctx context.Context, args sluice.JobArgs, opts *sluice.EnqueueOptions) (*sluice.EnqueueResult, error)
	Get(ctx context.Context, id string) (*sluice.JobRow, error)
	GetDecrypted(ctx context.Context, id string, keys ...sluice.EncryptionKey) (*sluice.JobRow, error)
	List(ctx context.Context, f *sluice.ListFilter) (*sluice.ListResult, error)
	Stats(ctx context.Context, f *sluice.StatsFilter) (*sluice.Stats, error)
	Explain(ctx context.Context, id string) (*sluice.Explanation, error)
	Cancel(ctx context.Context, id string) (*sluice.JobRow, error)
	Requeue(ctx context.Context, id string) (*sluice.JobRow, error)
	Delete(ctx context.Context, id string) (*sluice.JobRow, error)
	RetryNow(ctx context.Context, id string) (*sluice.JobRow, error)
	CancelMany(ctx context.Context, f *sluice.JobFilter) ([]*sluice.JobRow, error)
	RequeueMany(ctx context.Context, f *sluice.JobFilter) ([]*sluice.JobRow, error)
	DeleteMany(ctx context.Context, f *sluice.JobFilter) ([]*sluice.JobRow, error)
	RetryNowMany(ctx context.Context, f *sluice.JobFilter) ([]*sluice.JobRow, error)
	Clients(ctx context.Context) ([]*sluice.ClientInfo, error)
	Watch(ctx context.Context, opts *sluice.WatchOptions) (*sluice.ChangeSubscription, error)
	Subscribe(kinds ...sluice.EventKind) *sluice.Subscription
	CreateSchedule(ctx context.Context, s *sluice.Schedule) (*sluice.Schedule, error)
	UpdateSchedule(ctx context.Context, s *sluice.Schedule) (*sluice.Schedule, error)
	DeleteSchedule(ctx context.Context, name string) (*sluice.Schedule, error)
	GetSchedule(ctx context.Context, name string) (*sluice.Schedule, error)
	ListSchedules(ctx context.Context) ([]*sluice.Schedule, error)
	PauseQueue(ctx context.Context, queue string) (*sluice.QueueState, error)
	ResumeQueue(ctx context.Context, queue string) (*sluice.QueueState, error)
	QueueStates(ctx context.Context) ([]*sluice.QueueState, error)
	SetKeyLimits(ctx context.Context, scope sluice.Scope, l sluice.KeyLimits) (*sluice.Limits, error)
	SetTopicLimits(ctx context.Context, topic string, l sluice.TopicLimits) (*sluice.Limits, error)
	StoredLimits(ctx context.Context) ([]*sluice.Limits, error)
	KeyCounts(ctx context.Context, queue string, limit int) ([]*sluice.KeyCount, error)
	EnqueueWorkflow(ctx context.Context, w *sluice.Workflow) (*sluice.WorkflowResult, error)
	GetWorkflow(ctx context.Context, id string) (*sluice.Group, error)
	ListWorkflows(ctx context.Context, f *sluice.GroupFilter) (*sluice.GroupList, error)
	CancelWorkflow(ctx context.Context, id string) ([]*sluice.JobRow, error)
	RetryWorkflow(ctx context.Context, id string) ([]*sluice.JobRow, error)
	EnqueueBatch(ctx context.Context, b *sluice.Batch) (*sluice.BatchResult, error)
	AddToBatch(ctx context.Context, id string, jobs ...sluice.EnqueueParams) ([]*sluice.JobRow, error)
	CloseBatch(ctx context.Context, id string) (*sluice.Group, error)
	GetBatch(ctx context.Context, id string) (*sluice.Group, error)
	ListBatches(ctx context.Context, f *sluice.GroupFilter) (*sluice.GroupList, error)
	CancelBatch(ctx context.Context, id string) ([]*sluice.JobRow, error)
	RetryBatch(ctx context.Context, id string) ([]*sluice.JobRow, error)
	MaxPayloadBytes() int
	Topics() []string
	Metrics(ctx context.Context, f *sluice.MetricsFilter) (*sluice.Metrics, error)
}
