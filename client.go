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

	mu  sync.Mutex
	run atomic.Pointer[run] // non-nil while started

	events eventHub
	feed   feed
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
	for topic := range full.Workers.units {
		c.topics = append(c.topics, topic)
	}
	sort.Strings(c.topics)
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
func (c *Client[TTx]) now() time.Time {
	return c.cfg.Clock().UTC().Truncate(time.Microsecond)
}

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
