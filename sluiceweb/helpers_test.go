package sluiceweb_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/pgxdriver"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/internal/testkit/dbtest"
	"github.com/sluicehq/sluice/internal/testkit/sqlitetest"
	"github.com/sluicehq/sluice/sluiceweb"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain())
	}
	if os.Getenv(readersEnv) != "" {
		os.Exit(readersMain())
	}
	code := m.Run()
	// A whole run must have had every documented operation answer 2xx
	// once, its body checked against the document.
	if code == 0 && flag.Lookup("test.run").Value.String() == "" && flag.Lookup("test.skip").Value.String() == "" {
		if missing := uncoveredOperations(); len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: documented operations no test called with success: %v\n", missing)
			code = 1
		}
	}
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: goroutines leaked: %v\n", err)
		code = 1
	}
	os.Exit(code)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// mailArgs are the arguments of the tests' worker.
type mailArgs struct {
	To string `json:"to"`
}

func (mailArgs) Topic() string { return "mail" }

// testClient is what the tests use of a *sluice.Client, whatever its
// driver.
type testClient interface {
	Enqueue(ctx context.Context, args sluice.JobArgs, opts *sluice.EnqueueOptions) (*sluice.EnqueueResult, error)
	EnqueueMany(ctx context.Context, params []sluice.EnqueueParams) ([]sluice.EnqueueResult, error)
	Get(ctx context.Context, id string) (*sluice.JobRow, error)
	Cancel(ctx context.Context, id string) (*sluice.JobRow, error)
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	QueueStates(ctx context.Context) ([]*sluice.QueueState, error)
	StoredLimits(ctx context.Context) ([]*sluice.Limits, error)
}

// database is one test's database, whichever its driver.
type database struct {
	name string
	// serve returns a handler with opts over a client with cfg.
	serve func(t *testing.T, cfg *sluice.Config, opts *sluiceweb.Options) (*sluiceweb.Handler, testClient, error)
	// client returns another client over the same database.
	client func(t *testing.T, cfg *sluice.Config) testClient
	// env is the environment that points a helper process at it.
	env []string
}

// newDatabase returns the database of driver d.
func newDatabase[TTx any](name string, d driver.Driver[TTx], env []string) *database {
	newClient := func(t *testing.T, cfg *sluice.Config) *sluice.Client[TTx] {
		t.Helper()
		if cfg.Logger == nil {
			cfg.Logger = quiet
		}
		c, err := sluice.NewClient(d, cfg)
		require.NoError(t, err)
		return c
	}
	return &database{
		name: name,
		serve: func(t *testing.T, cfg *sluice.Config, opts *sluiceweb.Options) (*sluiceweb.Handler, testClient, error) {
			c := newClient(t, cfg)
			h, err := sluiceweb.New(c, opts)
			return h, c, err
		},
		client: func(t *testing.T, cfg *sluice.Config) testClient { return newClient(t, cfg) },
		env:    env,
	}
}

// each runs fn as a parallel subtest on a fresh SQLite file and on a fresh
// Postgres schema.
func each(t *testing.T, fn func(t *testing.T, db *database)) {
	t.Helper()
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		path := sqlitetest.Path(t)
		db, err := sqlitedriver.Open(path)
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		fn(t, newDatabase("sqlite", sqlitedriver.New(db), []string{helperDriver + "=sqlite", helperDSN + "=" + path}))
	})
	t.Run("Postgres", func(t *testing.T) {
		t.Parallel()
		pool, schema := dbtest.Pool(t)
		fn(t, newDatabase("postgres", pgxdriver.New(pool, pgxdriver.WithSchema(schema)),
			[]string{helperDriver + "=postgres", helperDSN + "=" + dbtest.URL(t), helperSchema + "=" + schema}))
	})
}

// quickFeed reads every 50 ms and stops with its last subscriber.
func quickFeed() sluice.ChangeFeedConfig {
	return sluice.ChangeFeedConfig{Interval: 50 * time.Millisecond, Lag: 2 * time.Second, Linger: -1}
}

// mailWorkers returns workers with a worker for mailArgs that does fn.
func mailWorkers(fn func(ctx context.Context, job *sluice.Job[mailArgs]) error) *sluice.Workers {
	w := sluice.NewWorkers()
	sluice.AddWorker(w, sluice.WorkFunc(fn))
	return w
}

// handlerConfig is the Config of the handler's client: a worker for mail
// jobs, which it never starts, so the jobs the tests enqueue stay put, and
// an extra queue.
func handlerConfig() *sluice.Config {
	return &sluice.Config{
		Workers:    mailWorkers(func(context.Context, *sluice.Job[mailArgs]) error { return nil }),
		Queues:     map[string]sluice.QueueConfig{sluice.QueueDefault: {MaxWorkers: 10}, "bulk": {}},
		ChangeFeed: quickFeed(),
		Logger:     quiet,
	}
}

// env is a handler served by a test server, and its client.
type env struct {
	t      *testing.T
	db     *database
	srv    *httptest.Server
	h      *sluiceweb.Handler
	client testClient
	doc    *openAPIDoc
}

// newEnv serves a handler with opts (AllowAll when nil) over a client with
// handlerConfig.
func newEnv(t *testing.T, db *database, opts *sluiceweb.Options) *env {
	t.Helper()
	return newEnvWith(t, db, handlerConfig(), opts)
}

// newEnvWith is newEnv over a client with cfg.
func newEnvWith(t *testing.T, db *database, cfg *sluice.Config, opts *sluiceweb.Options) *env {
	t.Helper()
	if opts == nil {
		opts = &sluiceweb.Options{Authorize: sluiceweb.AllowAll}
	}
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	h, c, err := db.serve(t, cfg, opts)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/sluice/", http.StripPrefix("/sluice", h))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Cleanup(h.Close) // runs first: event streams end before the server closes
	return &env{t: t, db: db, srv: srv, h: h, client: c, doc: loadDoc(t, srv.URL)}
}

// response is a response as read.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request to the handler (path relative to its mount point)
// and checks the response against the OpenAPI document.
func (e *env) do(method, path, body string, header ...string) *response {
	e.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.srv.URL+"/sluice/"+path, r)
	require.NoError(e.t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := e.srv.Client().Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	resp := &response{status: res.StatusCode, header: res.Header, body: data}
	if strings.HasPrefix(path, "api/") {
		e.doc.check(e.t, method, "/"+strings.SplitN(path, "?", 2)[0], resp)
	}
	return resp
}

// json decodes the response's body into v, requiring status.
func (r *response) json(t *testing.T, status int, v any) {
	t.Helper()
	require.Equal(t, status, r.status, "body: %s", r.body)
	require.NoError(t, json.Unmarshal(r.body, v), "body: %s", r.body)
}

// problemBody is an application/problem+json body.
type problemBody struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    string `json:"detail"`
	Code      string `json:"code"`
	Field     string `json:"field"`
	JobStatus string `json:"job_status"`
}

// problem requires r to be a problem of status and code, and returns it.
func (r *response) problem(t *testing.T, status int, code string) problemBody {
	t.Helper()
	require.Equal(t, status, r.status, "body: %s", r.body)
	require.Equal(t, "application/problem+json", r.header.Get("Content-Type"))
	var p problemBody
	require.NoError(t, json.Unmarshal(r.body, &p))
	require.Equal(t, code, p.Code, "body: %s", r.body)
	require.Equal(t, status, p.Status)
	require.Equal(t, "about:blank", p.Type)
	require.NotEmpty(t, p.Detail)
	return p
}

// jobJSON is a job as the API answers it.
type jobJSON struct {
	ID         string          `json:"id"`
	Topic      string          `json:"topic"`
	Queue      string          `json:"queue"`
	Priority   int             `json:"priority"`
	Payload    json.RawMessage `json:"payload"`
	Status     string          `json:"status"`
	Attempt    int             `json:"attempt"`
	MaxRetries int             `json:"max_retries"`
	RunAt      time.Time       `json:"run_at"`
	UniqueKey  string          `json:"unique_key"`
	History    []struct {
		Attempt int    `json:"attempt"`
		Error   string `json:"error"`
		Trace   string `json:"trace"`
	} `json:"history"`
	Progress *struct {
		Percent float64 `json:"percent"`
	} `json:"progress"`
	Tags        []string        `json:"tags"`
	Metadata    json.RawMessage `json:"metadata"`
	Logs        []logJSON       `json:"logs"`
	LogsDropped *int            `json:"logs_dropped"`
	DependsOn   []string        `json:"depends_on"`
	Waiting     bool            `json:"waiting"`
	Key         string          `json:"key"`
	Sequence    string          `json:"sequence"`
	GroupID     string          `json:"group_id"`
	Task        string          `json:"task"`
	CallbackOf  string          `json:"callback_of"`
}

// logJSON is a job's log record as the API answers it.
type logJSON struct {
	Attempt int             `json:"attempt"`
	Level   string          `json:"level"`
	Time    time.Time       `json:"time"`
	Message string          `json:"message"`
	Attrs   json.RawMessage `json:"attrs"`
}

// enqueue enqueues a mail job through the handler's client and returns
// its ID; it is due in an hour unless opts say otherwise.
func (e *env) enqueue(opts *sluice.EnqueueOptions) string {
	e.t.Helper()
	if opts == nil {
		opts = &sluice.EnqueueOptions{RunAt: time.Now().Add(time.Hour)}
	}
	res, err := e.client.Enqueue(e.t.Context(), mailArgs{To: "a@example.com"}, opts)
	require.NoError(e.t, err)
	return res.Job.ID
}
