package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/pgxdriver"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/sluiceweb"
)

// dbFlags say which database and table to open.
type dbFlags struct {
	url, table, schema string
}

// sharedFlags registers the flags every verb takes on fs. The global flag
// set and each verb's share the same variables, so they may come before or
// after the verb.
func (c *cli) sharedFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.db.url, "database-url", c.db.url, "postgres://… URL, or SQLite file path or sqlite:PATH (default $SLUICE_DATABASE_URL, then $DATABASE_URL)")
	fs.StringVar(&c.db.table, "table", c.db.table, "the jobs table (default sluice_jobs)")
	fs.StringVar(&c.db.schema, "schema", c.db.schema, "the Postgres schema of the jobs table")
	fs.BoolVar(&c.json, "json", c.json, "print JSON instead of tables")
}

// flags returns a verb's flag set, with the shared flags. It writes
// nothing itself: parse prints the help when asked, and fail reports a
// bad flag in one line with a pointer to the help.
func (c *cli) flags(name, args string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s\n\nFlags:\n", strings.TrimSpace("sluice "+name+" [flags] "+args))
		fs.PrintDefaults()
	}
	c.sharedFlags(fs)
	return fs
}

// parse parses args with fs, flags and arguments in any order (a "--" ends
// the flags), and returns the arguments. Asked for help, it prints the
// verb's flags to stdout and returns flag.ErrHelp.
func (c *cli) parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(c.stdout)
				fs.Usage()
				return nil, err
			}
			return nil, &usageError{msg: err.Error()}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// store is an opened database: its driver's migrations, and a way to open
// insert-only clients over it.
type store struct {
	kind       string // "postgres" or "sqlite"
	migrations driver.MigrationReporter
	migrate    func(context.Context) error
	// open returns an insert-only client over the database: it never
	// migrates and never works jobs. cfg.Queues are the queues it may
	// enqueue into.
	open  func(cfg *sluice.Config) (*jobClient, error)
	close func()
}

// jobClient is an insert-only client of either driver, as the verbs use it.
type jobClient struct {
	jobs
	// handler returns the sluiceweb handler over the client.
	handler func(*sluiceweb.Options) (*sluiceweb.Handler, error)
}

// jobs is what the verbs call on a client, whatever its transaction type.
type jobs interface {
	Get(ctx context.Context, id string) (*sluice.JobRow, error)
	List(ctx context.Context, f *sluice.ListFilter) (*sluice.ListResult, error)
	Stats(ctx context.Context, f *sluice.StatsFilter) (*sluice.Stats, error)
	Explain(ctx context.Context, id string) (*sluice.Explanation, error)
	Enqueue(ctx context.Context, args sluice.JobArgs, opts *sluice.EnqueueOptions) (*sluice.EnqueueResult, error)
	Cancel(ctx context.Context, id string) (*sluice.JobRow, error)
	Requeue(ctx context.Context, id string) (*sluice.JobRow, error)
	Delete(ctx context.Context, id string) (*sluice.JobRow, error)
	RetryNow(ctx context.Context, id string) (*sluice.JobRow, error)
	CancelMany(ctx context.Context, f *sluice.JobFilter) ([]*sluice.JobRow, error)
	RequeueMany(ctx context.Context, f *sluice.JobFilter) ([]*sluice.JobRow, error)
	DeleteMany(ctx context.Context, f *sluice.JobFilter) ([]*sluice.JobRow, error)
	RetryNowMany(ctx context.Context, f *sluice.JobFilter) ([]*sluice.JobRow, error)
	PauseQueue(ctx context.Context, queue string) (*sluice.QueueState, error)
	ResumeQueue(ctx context.Context, queue string) (*sluice.QueueState, error)
	SetQueueLimits(ctx context.Context, queue string, l sluice.QueueLimits) (*sluice.QueueState, error)
	QueueStates(ctx context.Context) ([]*sluice.QueueState, error)
	SetKeyLimits(ctx context.Context, scope sluice.Scope, l sluice.KeyLimits) (*sluice.Limits, error)
	SetTopicLimits(ctx context.Context, topic string, l sluice.TopicLimits) (*sluice.Limits, error)
	StoredLimits(ctx context.Context) ([]*sluice.Limits, error)
	KeyCounts(ctx context.Context, queue string, limit int) ([]*sluice.KeyCount, error)
	GetWorkflow(ctx context.Context, id string) (*sluice.Group, error)
	ListWorkflows(ctx context.Context, f *sluice.GroupFilter) (*sluice.GroupList, error)
	CancelWorkflow(ctx context.Context, id string) ([]*sluice.JobRow, error)
	RetryWorkflow(ctx context.Context, id string) ([]*sluice.JobRow, error)
	GetBatch(ctx context.Context, id string) (*sluice.Group, error)
	ListBatches(ctx context.Context, f *sluice.GroupFilter) (*sluice.GroupList, error)
	CancelBatch(ctx context.Context, id string) ([]*sluice.JobRow, error)
	RetryBatch(ctx context.Context, id string) ([]*sluice.JobRow, error)
	CloseBatch(ctx context.Context, id string) (*sluice.Group, error)
}

// migratingDriver is a driver that can report its migrations.
type migratingDriver[TTx any] interface {
	driver.Driver[TTx]
	driver.MigrationReporter
}

// newStore returns the store over d.
func newStore[TTx any](kind string, d migratingDriver[TTx], logger *slog.Logger, closeFn func()) *store {
	return &store{kind: kind, migrations: d, migrate: d.Migrate, close: closeFn,
		open: func(cfg *sluice.Config) (*jobClient, error) {
			full := *cfg
			full.SkipMigrations = true
			full.Workers = nil
			full.PeriodicJobs = nil
			full.Logger = logger
			c, err := sluice.NewClient(d, &full)
			if err != nil {
				return nil, err
			}
			return &jobClient{jobs: c, handler: func(o *sluiceweb.Options) (*sluiceweb.Handler, error) {
				return sluiceweb.New(c, o)
			}}, nil
		}}
}

// databaseURL returns the database to open: the flag, else the environment.
func (c *cli) databaseURL() (string, error) {
	for _, u := range []string{c.db.url, c.getenv("SLUICE_DATABASE_URL"), c.getenv("DATABASE_URL")} {
		if u != "" {
			return u, nil
		}
	}
	return "", usageErrorf("no database: give --database-url, or set SLUICE_DATABASE_URL or DATABASE_URL")
}

// openStore opens the database. A SQLite file must exist unless create is
// true (only "migrate up" creates one).
func (c *cli) openStore(ctx context.Context, create bool) (*store, error) {
	url, err := c.databaseURL()
	if err != nil {
		return nil, err
	}
	logger := slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	scheme, _, hasScheme := strings.Cut(url, "://")
	switch {
	case hasScheme && (scheme == "postgres" || scheme == "postgresql"):
		return c.openPostgres(ctx, url, logger)
	case strings.HasPrefix(url, "sqlite:"):
		path := strings.TrimPrefix(strings.TrimPrefix(url, "sqlite:"), "//")
		return c.openSQLite(path, create, logger)
	case hasScheme && !strings.ContainsAny(scheme, `/\.`):
		return nil, usageErrorf("database URL scheme %q: want postgres://, postgresql://, sqlite: or a file path", scheme)
	}
	return c.openSQLite(url, create, logger)
}

func (c *cli) openPostgres(ctx context.Context, url string, logger *slog.Logger) (*store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, usageErrorf("database URL: %v", err)
	}
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to postgres: %w", err)
	}
	var opts []pgxdriver.Option
	if c.db.table != "" {
		opts = append(opts, pgxdriver.WithTable(c.db.table))
	}
	if c.db.schema != "" {
		opts = append(opts, pgxdriver.WithSchema(c.db.schema))
	}
	return newStore("postgres", pgxdriver.New(pool, opts...), logger, pool.Close), nil
}

func (c *cli) openSQLite(path string, create bool, logger *slog.Logger) (*store, error) {
	if c.db.schema != "" {
		return nil, usageErrorf("--schema is for Postgres; a SQLite file has none")
	}
	if path == "" {
		return nil, usageErrorf("sqlite: URL without a file path")
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) && !create {
		return nil, fmt.Errorf("SQLite file %s does not exist (sluice migrate up creates it)", path)
	}
	db, err := sqlitedriver.Open(path)
	if err != nil {
		return nil, err
	}
	var opts []sqlitedriver.Option
	if c.db.table != "" {
		opts = append(opts, sqlitedriver.WithTable(c.db.table))
	}
	return newStore("sqlite", sqlitedriver.New(db, opts...), logger, func() { _ = db.Close() }), nil
}

// client opens the database and an insert-only client over it whose
// schema is up to date, for the verbs that read and change jobs. queues
// are the queues it may enqueue into, besides the default one.
func (c *cli) client(ctx context.Context, queues ...string) (*jobClient, func(), error) {
	st, err := c.openStore(ctx, false)
	if err != nil {
		return nil, nil, err
	}
	if err := checkMigrated(ctx, st); err != nil {
		st.close()
		return nil, nil, err
	}
	cfg := &sluice.Config{Queues: map[string]sluice.QueueConfig{sluice.QueueDefault: {}}}
	for _, q := range queues {
		cfg.Queues[q] = sluice.QueueConfig{}
	}
	jc, err := st.open(cfg)
	if err != nil {
		st.close()
		return nil, nil, err
	}
	return jc, st.close, nil
}

// checkMigrated returns an error when the schema has pending migrations.
func checkMigrated(ctx context.Context, st *store) error {
	ms, err := st.migrations.MigrationStatus(ctx)
	if err != nil {
		return err
	}
	if n := pending(ms); n > 0 {
		return fmt.Errorf("the schema is not up to date (%d of %d migrations pending): run sluice migrate up", n, len(ms))
	}
	return nil
}

// pending returns how many of ms are not applied.
func pending(ms []driver.MigrationState) int {
	n := 0
	for _, m := range ms {
		if !m.Applied() {
			n++
		}
	}
	return n
}

// out returns where results are written.
func (c *cli) out() io.Writer { return c.stdout }
