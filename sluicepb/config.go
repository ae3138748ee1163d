package sluicepb

import (
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// DefaultTable is the name of the jobs table in data.db unless
// Config.Table says otherwise.
const DefaultTable = "_jobs"

// DefaultShutdownTimeout is how long the app's termination waits for
// running jobs to finish unless Config.ShutdownTimeout says otherwise.
const DefaultShutdownTimeout = 10 * time.Second

// Rules with a fixed meaning, for Config.EnqueueRule and Config.ManageRule.
const (
	// RuleSuperusers, the empty rule, allows superusers only.
	RuleSuperusers = ""
	// RulePublic allows every request, with or without an auth token.
	RulePublic = "true"
)

// Config configures the jobs of a PocketBase app. The zero value (or nil)
// is valid: jobs in _jobs, the HTTP API for superusers only, ten workers.
type Config struct {
	// Table is the jobs table in data.db; the tables beside it take its
	// name as prefix (_jobs_migrations, _jobs_clients, ...). It must be a
	// plain SQL identifier. Default DefaultTable ("_jobs").
	Table string

	// DisableHTTP turns off the HTTP API under /api/jobs and the Jobs
	// panel. Default false: both are served.
	DisableHTTP bool

	// EnqueueRule decides who may enqueue over HTTP (POST
	// /api/jobs/enqueue). RuleSuperusers (""), the default, allows
	// superusers only; RulePublic ("true") allows everyone; anything else
	// is a PocketBase filter that may use @request.auth.*,
	// @request.body.*, @request.headers.*, topic and payload.* (the job
	// being enqueued), as in `@request.auth.id != "" && topic = "mail"`.
	// Superusers are always allowed.
	EnqueueRule string

	// ManageRule decides who may read and manage jobs over HTTP: get,
	// list, stats, the event stream, requeue, cancel, retry, delete and
	// schedules. Same forms as EnqueueRule; for a request on one job,
	// topic and payload.* are that job's; for a request on many jobs,
	// topic is the one topic it filters by (empty otherwise) and payload
	// is empty. Default RuleSuperusers.
	ManageRule string

	// AllowedTopics, when not empty, are the only topics that may be
	// enqueued over HTTP, whoever asks (superusers too). Default: every
	// topic.
	AllowedTopics []string

	// Workers is how many jobs of the default queue run at once in this
	// process. Default sluice.DefaultMaxWorkers (10). Other queues are
	// configured in Sluice.Queues.
	Workers int

	// PollInterval is how often the queue is checked for due jobs when no
	// wake-up comes sooner; jobs enqueued in this process wake the workers
	// at once. Default sluice.DefaultPollInterval (1 s).
	PollInterval time.Duration

	// LockDuration is how long a claimed job is locked to its worker: a
	// job whose process dies runs again once its lock expires. Running
	// jobs' locks are extended while they run. Default
	// sluice.DefaultLeaseDuration (30 s).
	LockDuration time.Duration

	// YieldToRequests is how long, at most, the queue waits before it
	// claims more jobs while the app serves requests that may write (any
	// method but GET, HEAD and OPTIONS), so that they get PocketBase's
	// single write connection, and the processors, first. While the app
	// serves requests of any kind (one came within the last 100 ms), the
	// queue also pauses 0.5 ms before each claim, which leaves the Go
	// runtime room to read the network. So a record created while the
	// queue burns a backlog waits little longer than on an idle app, and
	// the queue works fewer jobs per second meanwhile (no-op jobs on two
	// cores: about half). Jobs already claimed run and complete all the
	// while, and enqueues never wait. A request that lasts (a large
	// upload) holds each claim for YieldToRequests, no longer; a claim
	// made inside a request (sluice's WorkNext with the request's
	// context) does not wait. Default DefaultYieldToRequests (10 ms); at
	// most MaxYieldToRequests (1 s); a negative value turns yielding off.
	YieldToRequests time.Duration

	// ShutdownTimeout is how long the app's termination waits for running
	// jobs to finish; jobs still running then are cancelled and handed
	// back to run again. Default DefaultShutdownTimeout (10 s).
	ShutdownTimeout time.Duration

	// Sluice is the rest of the client's configuration: queues, retries,
	// retention, periodic jobs, hooks, middleware. Its Workers and
	// SkipMigrations are ignored (workers are added with AddWorker, and
	// the schema is migrated at bootstrap); the fields above override its
	// PollInterval and LeaseDuration when set, and set the default
	// queue's workers when Queues is empty. Its Logger defaults to the
	// app's logger. Default nil: sluice's defaults.
	Sluice *sluice.Config
}

// ConfigError reports an invalid Config: the field and what is wrong with
// it. It matches sluice.ErrInvalidConfig.
type ConfigError struct {
	// Field is the rejected field, e.g. "Table".
	Field string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("sluicepb: invalid config: %s: %s", e.Field, e.Reason)
}

// Is makes a ConfigError match sluice.ErrInvalidConfig.
func (e *ConfigError) Is(target error) bool { return target == sluice.ErrInvalidConfig }

// withDefaults returns a copy of cfg with its defaults filled in, or an
// error naming the first invalid field.
func (cfg *Config) withDefaults() (*Config, error) {
	c := Config{}
	if cfg != nil {
		c = *cfg
	}
	if c.Table == "" {
		c.Table = DefaultTable
	}
	if d := sqlitedriver.New(nil, sqlitedriver.WithTable(c.Table)); d.Table() != c.Table {
		return nil, &ConfigError{Field: "Table", Reason: fmt.Sprintf("%q is not a plain SQL identifier", c.Table)}
	}
	switch {
	case c.Workers < 0:
		return nil, &ConfigError{Field: "Workers", Reason: "must not be negative"}
	case c.PollInterval < 0:
		return nil, &ConfigError{Field: "PollInterval", Reason: "must not be negative"}
	case c.LockDuration < 0:
		return nil, &ConfigError{Field: "LockDuration", Reason: "must not be negative"}
	case c.ShutdownTimeout < 0:
		return nil, &ConfigError{Field: "ShutdownTimeout", Reason: "must not be negative"}
	case c.YieldToRequests > MaxYieldToRequests:
		return nil, &ConfigError{Field: "YieldToRequests", Reason: fmt.Sprintf("%s is more than %s: a claim waits that long with its lease already counting", c.YieldToRequests, MaxYieldToRequests)}
	}
	for i, t := range c.AllowedTopics {
		if t == "" {
			return nil, &ConfigError{Field: fmt.Sprintf("AllowedTopics[%d]", i), Reason: "empty"}
		}
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.YieldToRequests == 0 {
		c.YieldToRequests = DefaultYieldToRequests
	}
	if err := c.checkSluice(); err != nil {
		return nil, err
	}
	return &c, nil
}

// checkSluice checks the client's configuration now, rather than when the
// app serves: sluice.NewClient validates it without touching a database
// (migrations are skipped).
func (cfg *Config) checkSluice() error {
	_, err := sluice.NewClient(sqlitedriver.New(nil), cfg.sluiceConfig(sluice.NewWorkers()))
	var ce *sluice.ConfigError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		return &ConfigError{Field: "Sluice." + ce.Field, Reason: ce.Reason}
	default:
		return &ConfigError{Field: "Sluice", Reason: err.Error()}
	}
}

// sluiceConfig returns the client's configuration: Sluice with the
// fields of cfg that override it, workers and the migrations skipped.
func (cfg *Config) sluiceConfig(workers *sluice.Workers) *sluice.Config {
	sc := sluice.Config{}
	if cfg.Sluice != nil {
		sc = *cfg.Sluice
	}
	sc.Workers = workers
	sc.SkipMigrations = true
	if cfg.PollInterval > 0 {
		sc.PollInterval = cfg.PollInterval
	}
	if cfg.LockDuration > 0 {
		sc.LeaseDuration = cfg.LockDuration
	}
	if len(sc.Queues) == 0 {
		n := cfg.Workers
		if n == 0 {
			n = sluice.DefaultMaxWorkers
		}
		sc.Queues = map[string]sluice.QueueConfig{sluice.QueueDefault: {MaxWorkers: n}}
	} else {
		sc.Queues = maps.Clone(sc.Queues)
	}
	return &sc
}
