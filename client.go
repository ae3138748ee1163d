package sluice

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// migrateTimeout bounds the migrations NewClient runs.
const migrateTimeout = time.Minute

// Client enqueues jobs and, once started, works them. TTx is the driver's
// transaction type (*sql.Tx for sqlitedriver, pgx.Tx for pgxdriver): the
// Tx methods take the caller's own transaction, checked at compile time.
//
// A Client is safe for concurrent use.
type Client[TTx any] struct {
	driver driver.Driver[TTx]
	exec   driver.Executor
	cfg    *Config
	// topics are the topics this client has workers for, sorted.
	topics []string
	// periodic are Config.PeriodicJobs, checked.
	periodic []*periodicJob

	mu  sync.Mutex
	run atomic.Pointer[run] // non-nil while started

	events eventHub
	feed   feed
	// limits is the stored limits as last read, for the sequence
	// policies of enqueues (see resolveSequences).
	limits cachedLimits
}

// NewClient returns a client over d, with cfg's defaults filled in (nil
// means all defaults: an insert-only client). It validates cfg, returning an
// error matching ErrInvalidConfig that names the bad field, and, unless
// cfg.SkipMigrations, brings the database schema up to date. It starts no
// goroutines; Start does.
func NewClient[TTx any](d driver.Driver[TTx], cfg *Config) (*Client[TTx], error) {
	if d == nil {
		return nil, &ConfigError{Field: "driver", Reason: "must not be nil"}
	}
	full, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Client[TTx]{driver: d, exec: d.Executor(), cfg: full}
	c.events.now = full.now
	for topic := range full.Workers.units {
		c.topics = append(c.topics, topic)
	}
	sort.Strings(c.topics)
	if c.periodic, err = c.checkPeriodicJobs(); err != nil {
		return nil, err
	}
	if !full.SkipMigrations {
		ctx, cancel := context.WithTimeout(context.Background(), migrateTimeout)
		defer cancel()
		if err := d.Migrate(ctx); err != nil {
			return nil, fmt.Errorf("sluice: migrate: %w", err)
		}
	}
	return c, nil
}

// clientKey is the context key under which a job's context carries its
// client.
type clientKey struct{}

// ClientFromContext returns the client working the job whose context ctx
// is, so that a worker can call Ack, Nack or Enqueue without holding the
// client itself. TTx must be the client's transaction type. It returns nil
// for a context that no client handed to a worker.
func ClientFromContext[TTx any](ctx context.Context) *Client[TTx] {
	c, _ := ctx.Value(clientKey{}).(*Client[TTx])
	return c
}

// Start starts working jobs: one claim loop per queue with workers, a
// heartbeat that keeps running jobs' leases, a rescuer that takes back
// jobs of clients that are gone, a check that stops workers whose jobs
// were cancelled, a writer of the progress running jobs report (see
// ReportProgress), a cleaner that deletes expired finished jobs (see
// Config.Retention), and a scheduler that enqueues the jobs of stored
// schedules and periodic jobs at their ticks. ctx bounds start-up only
// and its values reach job contexts; cancelling it later does not stop
// the client: Stop does. It returns ErrNoWorkers for an insert-only client and
// ErrAlreadyStarted if running.
func (c *Client[TTx]) Start(ctx context.Context) error {
	if len(c.topics) == 0 {
		return fmt.Errorf("start: %w", ErrNoWorkers)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.run.Load() != nil {
		return fmt.Errorf("start: %w", ErrAlreadyStarted)
	}
	r := newRun(context.WithValue(ctx, clientKey{}, c), c.cfg, c.exec, &c.events, c.topics)
	r.sched = c.newScheduler(r)
	r.start(ctx, c.driver)
	c.run.Store(r)
	return nil
}

// Stop stops the client gracefully, in the manner of http.Server.Shutdown:
// it stops claiming jobs, then waits for running jobs to finish. If ctx ends
// first, it cancels the running jobs' contexts, waits briefly for their
// workers to return, and hands every unfinished job back as pending at once,
// so that it runs again without waiting for its lease to expire (a worker
// that returns Cancel or Snooze is taken at its word); it then returns ctx's
// error. The outcomes of finished and handed-back jobs are written before
// Stop returns, which past the deadline takes at most a few seconds more,
// and no goroutine of the client outlives it (a worker that ignores its
// context's cancellation is the one exception). Stop is idempotent and a
// no-op on a client that was never started; concurrent calls wait for the
// same shutdown, and the earliest deadline among them applies.
func (c *Client[TTx]) Stop(ctx context.Context) error {
	return c.stop(ctx, false)
}

// StopAndCancel stops the client as Stop does, but cancels running jobs'
// contexts at once instead of waiting for them to finish.
func (c *Client[TTx]) StopAndCancel(ctx context.Context) error {
	return c.stop(ctx, true)
}

func (c *Client[TTx]) stop(ctx context.Context, cancelFirst bool) error {
	r := c.run.Load()
	if r == nil {
		return nil
	}
	return r.stop(ctx, cancelFirst, func() {
		c.mu.Lock()
		c.run.CompareAndSwap(r, nil)
		c.mu.Unlock()
	})
}

// Driver returns the client's driver.
func (c *Client[TTx]) Driver() driver.Driver[TTx] { return c.driver }

// Get returns the job with the given ID, or an error matching ErrNotFound.
func (c *Client[TTx]) Get(ctx context.Context, id string) (*JobRow, error) {
	row, err := c.exec.JobGet(ctx, &driver.JobGetParams{ID: id})
	if err != nil {
		return nil, fmt.Errorf("get job %s: %w", id, err)
	}
	return row, nil
}

// GetTx is Get inside tx: it sees the transaction's own uncommitted writes.
func (c *Client[TTx]) GetTx(ctx context.Context, tx TTx, id string) (*JobRow, error) {
	if isNil(tx) {
		return nil, fmt.Errorf("get job %s: %w", id, ErrNilTx)
	}
	row, err := c.driver.UnwrapExecutor(tx).JobGet(ctx, &driver.JobGetParams{ID: id})
	if err != nil {
		return nil, fmt.Errorf("get job %s: %w", id, err)
	}
	return row, nil
}

// now returns the client's current time at the precision drivers store.
func (c *Client[TTx]) now() time.Time { return c.cfg.now() }

// isNil reports whether a transaction value is nil, whether it is a nil
// interface (pgx.Tx) or a nil pointer (*sql.Tx).
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return rv.IsNil()
	}
	return false
}
