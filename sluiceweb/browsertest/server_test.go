package browsertest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/pgxdriver"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/internal/testkit/dbtest"
	"github.com/sluicehq/sluice/sluiceweb"
)

// flakyArgs are a job that fails while its upstream is down.
type flakyArgs struct {
	Order int `json:"order"`
}

func (flakyArgs) Topic() string { return "flaky" }

// longArgs are a job that reports progress and logs as the test lets it
// advance, and runs until it is cancelled.
type longArgs struct {
	Name string `json:"name"`
}

func (longArgs) Topic() string { return "long" }

// mailArgs are a job that completes at once.
type mailArgs struct {
	To string `json:"to"`
}

func (mailArgs) Topic() string { return "mail" }

// syncArgs are a job of one account that fails when told to, and else
// runs until the test releases it.
type syncArgs struct {
	Account string `json:"account"`
	Fail    bool   `json:"fail,omitempty"`
}

func (syncArgs) Topic() string { return "sync" }

// stepArgs are a task of a workflow or a job of a batch: it runs until
// the test releases its name, and then fails if the test said so.
type stepArgs struct {
	Name string `json:"name"`
}

func (stepArgs) Topic() string { return "step" }

// fixture is what the test controls of its workers.
type fixture struct {
	// healthy makes flaky jobs succeed.
	healthy atomic.Bool
	// advance, once closed, moves the long job from its first step to
	// its second.
	advance chan struct{}
	// done ends the long job's worker at the test's end.
	done chan struct{}
	// release, once closed, completes the sync jobs.
	release chan struct{}
	// configure, when not nil, changes the client's Config, and web the
	// handler's Options.
	configure func(*sluice.Config)
	web       func(*sluiceweb.Options)

	// steps are the gates of the step jobs, by name, and failing the
	// names of those that fail once released.
	mu      sync.Mutex
	steps   map[string]chan struct{}
	failing map[string]bool
}

// gate returns the gate of the step jobs named name.
func (fx *fixture) gate(name string) chan struct{} {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	if fx.steps[name] == nil {
		fx.steps[name] = make(chan struct{})
	}
	return fx.steps[name]
}

// step lets the step jobs named names finish, or fail when fail is true.
func (fx *fixture) step(fail bool, names ...string) {
	for _, name := range names {
		fx.mu.Lock()
		fx.failing[name] = fail
		fx.mu.Unlock()
		close(fx.gate(name))
	}
}

// reset shuts the gate of the step jobs named name again, so that they
// wait once more (a retry), and succeed.
func (fx *fixture) reset(name string) {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	fx.steps[name] = make(chan struct{})
	fx.failing[name] = false
}

func (fx *fixture) runStep(ctx context.Context, job *sluice.Job[stepArgs]) error {
	select {
	case <-fx.gate(job.Args.Name):
	case <-ctx.Done():
		return ctx.Err()
	case <-fx.done:
		return nil
	}
	fx.mu.Lock()
	fail := fx.failing[job.Args.Name]
	fx.mu.Unlock()
	if fail {
		return errors.New("step " + job.Args.Name + " failed: disk full")
	}
	return nil
}

func (fx *fixture) workers() *sluice.Workers {
	w := sluice.NewWorkers()
	sluice.AddWorker(w, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[flakyArgs]) error {
		if !fx.healthy.Load() {
			return errors.New("upstream said no: 503 Service Unavailable")
		}
		return nil
	}))
	sluice.AddWorker(w, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[mailArgs]) error { return nil }))
	sluice.AddWorker(w, sluice.WorkFunc(fx.long))
	sluice.AddWorker(w, sluice.WorkFunc(fx.sync))
	sluice.AddWorker(w, sluice.WorkFunc(fx.runStep))
	return w
}

func (fx *fixture) sync(ctx context.Context, job *sluice.Job[syncArgs]) error {
	if job.Args.Fail {
		return errors.New("account " + job.Args.Account + " is locked: 423 Locked")
	}
	select {
	case <-fx.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-fx.done:
		return nil
	}
}

func (fx *fixture) long(ctx context.Context, job *sluice.Job[longArgs]) error {
	log := sluice.Logger(ctx)
	if err := sluice.ReportProgress(ctx, 10, "step 1 of 3"); err != nil {
		return err
	}
	log.Info("started step 1", "rows", 120)
	select {
	case <-fx.advance:
	case <-ctx.Done():
		return ctx.Err()
	case <-fx.done:
		return nil
	}
	if err := sluice.ReportProgress(ctx, 60, "step 2 of 3"); err != nil {
		return err
	}
	log.Info("reached step 2", "rows", 480)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-fx.done:
		return nil
	}
}

// enqueuer is what the test uses of its client.
type enqueuer interface {
	Enqueue(ctx context.Context, args sluice.JobArgs, opts *sluice.EnqueueOptions) (*sluice.EnqueueResult, error)
	GetSchedule(ctx context.Context, name string) (*sluice.Schedule, error)
	QueueStates(ctx context.Context) ([]*sluice.QueueState, error)
	StoredLimits(ctx context.Context) ([]*sluice.Limits, error)
	SetTopicLimits(ctx context.Context, topic string, l sluice.TopicLimits) (*sluice.Limits, error)
	SetKeyLimits(ctx context.Context, scope sluice.Scope, l sluice.KeyLimits) (*sluice.Limits, error)
	Get(ctx context.Context, id string) (*sluice.JobRow, error)
	List(ctx context.Context, f *sluice.ListFilter) (*sluice.ListResult, error)
	DeleteMany(ctx context.Context, f *sluice.JobFilter) ([]*sluice.JobRow, error)
	EnqueueWorkflow(ctx context.Context, w *sluice.Workflow) (*sluice.WorkflowResult, error)
	EnqueueBatch(ctx context.Context, b *sluice.Batch) (*sluice.BatchResult, error)
}

// server is a dashboard served over a client with the fixture's workers.
type server struct {
	url    string // the dashboard, mounted under /sluice/
	client enqueuer
	// exec is the driver's executor, for what no client call writes.
	exec driver.Executor
}

// serve starts a client on d and a server of its dashboard, mounted under a
// prefix, and stops both at the test's end.
func serve[TTx any](t *testing.T, d driver.Driver[TTx], fx *fixture) *server {
	t.Helper()
	cfg := &sluice.Config{
		Workers:          fx.workers(),
		Queues:           map[string]sluice.QueueConfig{sluice.QueueDefault: {MaxWorkers: sluice.DefaultMaxWorkers}, "sync": {MaxWorkers: 5}},
		Logger:           slog.New(slog.NewTextHandler(io.Discard, nil)),
		ProgressInterval: 100 * time.Millisecond,
	}
	if fx.configure != nil {
		fx.configure(cfg)
	}
	client, err := sluice.NewClient(d, cfg)
	require.NoError(t, err)
	require.NoError(t, client.Start(t.Context()))
	opts := &sluiceweb.Options{Authorize: sluiceweb.AllowAll}
	if fx.web != nil {
		fx.web(opts)
	}
	h, err := sluiceweb.New(client, opts)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/sluice/", http.StripPrefix("/sluice", h))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		close(fx.done)
		h.Close() // ends the event streams, which Close would wait for
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, client.Stop(ctx))
	})
	return &server{url: srv.URL + "/sluice/", client: client, exec: d.Executor()}
}

// newFixture returns a fixture whose long job waits to advance.
func newFixture() *fixture {
	return &fixture{advance: make(chan struct{}), done: make(chan struct{}), release: make(chan struct{}),
		steps: map[string]chan struct{}{}, failing: map[string]bool{}}
}

// serveSQLite serves the dashboard over a client on a SQLite file of the
// test's own.
func serveSQLite(t *testing.T, fx *fixture) *server {
	t.Helper()
	db, err := sqlitedriver.Open(filepath.Join(t.TempDir(), "jobs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return serve(t, sqlitedriver.New(db), fx)
}

// onBothDrivers runs fn on a SQLite file and on a Postgres schema of its own,
// one after the other: a browser each at once would be slow on a small
// machine.
func onBothDrivers(t *testing.T, fn func(t *testing.T, s *server, fx *fixture)) {
	onBothDriversWith(t, nil, fn)
}

// onBothDriversWith is onBothDrivers with each fixture set up by setup
// (its configure and web) before its server starts.
func onBothDriversWith(t *testing.T, setup func(*fixture), fn func(t *testing.T, s *server, fx *fixture)) {
	t.Run("SQLite", func(t *testing.T) {
		fx := newFixture()
		if setup != nil {
			setup(fx)
		}
		fn(t, serveSQLite(t, fx), fx)
	})
	t.Run("Postgres", func(t *testing.T) {
		pool, schema := dbtest.Pool(t)
		fx := newFixture()
		if setup != nil {
			setup(fx)
		}
		fn(t, serve(t, pgxdriver.New(pool, pgxdriver.WithSchema(schema)), fx), fx)
	})
}
