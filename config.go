package sluice

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"regexp"
	"time"

	"github.com/google/uuid"
)

// Defaults of Config, from the original design.
const (
	// DefaultMaxWorkers is the number of workers of the default queue.
	DefaultMaxWorkers = 10
	// DefaultPollInterval is how often a client looks for due jobs when
	// nothing wakes it sooner.
	DefaultPollInterval = time.Second
	// DefaultJobTimeout is how long a job may run.
	DefaultJobTimeout = 10 * time.Minute
	// DefaultMaxRetries is how many times a failed job is retried.
	DefaultMaxRetries = 3
	// DefaultMaxPayloadBytes is the largest JSON payload accepted: 1 MiB.
	DefaultMaxPayloadBytes = 1 << 20
	// DefaultLeaseDuration is how long a claim lasts without a heartbeat.
	DefaultLeaseDuration = 30 * time.Second
	// DefaultProgressInterval is how often a client writes the progress
	// its running jobs report.
	DefaultProgressInterval = time.Second
)

// Config configures a Client. The zero value (or nil) is a valid
// insert-only configuration; each field's doc gives its default.
type Config struct {
	// Workers are the workers this client runs. Nil or empty makes an
	// insert-only client: it can enqueue, Ack and Nack, but not Start.
	Workers *Workers

	// Queues are the queues this client knows, by name, each with how many
	// of its jobs the client works at once. A client claims jobs only from
	// queues with MaxWorkers >= 1, and only jobs whose topics it has workers
	// for. Jobs may be enqueued only into the queues named here. Default:
	// QueueDefault with DefaultMaxWorkers (10) workers.
	Queues map[string]QueueConfig

	// PollInterval is how often each queue is checked for due jobs when
	// no wake-up comes sooner (at least 1 ms). Enqueues through this process wake the
	// client at once. Default 1 s.
	PollInterval time.Duration

	// JobTimeout is how long a job may run before its context is cancelled;
	// a worker's Timeout overrides it. Negative means no timeout. Default
	// 10 minutes.
	JobTimeout time.Duration

	// MaxRetries is how many times a job is retried after its first attempt
	// fails, unless its options or its worker say otherwise. NoRetries means
	// never; 0 means the default, 3.
	MaxRetries int

	// Retention is how long finished jobs are kept before a started client
	// deletes them: by default completed jobs for 24 hours, failed and
	// cancelled ones for 7 days.
	Retention Retention

	// RetryPolicy schedules retries, unless a worker has its own. Default
	// SquareRetryPolicy: 1, 4, 9 … minutes.
	RetryPolicy RetryPolicy

	// MaxPayloadBytes is the largest JSON payload a job may have. Default
	// 1 MiB.
	MaxPayloadBytes int

	// LeaseDuration is how long a claim lasts (at least 100 ms): a job whose client neither
	// finishes it nor extends its lease within this time is taken back by
	// any running client and run again. Running jobs' leases are extended
	// every HeartbeatInterval, so a long job is never taken over while its
	// client is alive. Default 30 s: a crashed client's jobs run again
	// within about a minute.
	LeaseDuration time.Duration

	// HeartbeatInterval is how often the leases of running jobs are
	// extended; it must be shorter than LeaseDuration. Default a third of
	// LeaseDuration.
	HeartbeatInterval time.Duration

	// PollOnly, when true, makes the client find new jobs by polling alone,
	// even when its driver can deliver wake-ups (Postgres LISTEN/NOTIFY).
	// Behind a connection pooler in transaction mode, where a session-level
	// LISTEN cannot work, the Postgres driver declines to listen by itself
	// unless it is given a direct connection for it, and the client polls;
	// PollOnly spares the attempt. Enqueues through this client still wake
	// it at once. Default false.
	PollOnly bool

	// RescueInterval is how often the client looks for expired leases.
	// Default half of LeaseDuration.
	RescueInterval time.Duration

	// ProgressInterval is how often a started client writes the progress
	// its running jobs reported with ReportProgress (at least 10 ms): one
	// write per interval for all jobs whose progress changed since the
	// last, none when nothing changed. Default 1 s.
	ProgressInterval time.Duration

	// ClientID names this client in the jobs it holds (their LockedBy,
	// followed by a random suffix per Start). Default host name and
	// process ID.
	ClientID string

	// Logger receives the client's logs. Default slog.Default().
	Logger *slog.Logger

	// Clock returns the current time; every time the client stores comes
	// from it, and it decides which jobs are due. Default time.Now. Tests
	// set it to a clock they move by hand (sluicetest.Clock) to fire
	// delayed jobs and retries without waiting.
	Clock func() time.Time

	// NewJobID returns a new job ID, which must be a UUID in text form.
	// Default: a random UUID version 7, so IDs sort by creation time.
	NewJobID func() string

	// PeriodicJobs are jobs that every started client enqueues at each
	// tick of their cron expressions: exactly one job per tick however
	// many clients run the same Config (see PeriodicJob). Insert-only
	// clients do not schedule. Default none.
	PeriodicJobs []PeriodicJob

	// ChangeFeed configures the change feed Watch reads; each field's doc
	// gives its default.
	ChangeFeed ChangeFeedConfig

	// SkipMigrations, when true, makes NewClient leave the schema alone; the
	// database must then be migrated beforehand. Default false: NewClient
	// brings the schema up to date.
	SkipMigrations bool

	// JobLogs bounds what Logger keeps with each job. Default: the newest
	// 100 records, at most 32 KiB, of level Info and above.
	JobLogs JobLogConfig

	// WorkMiddleware wraps the work of every job, the first outermost,
	// around the worker's own (see WorkMiddleware). Default none.
	WorkMiddleware []WorkMiddleware

	// EnqueueMiddleware wraps every enqueue, the first outermost (see
	// EnqueueMiddleware). Default none.
	EnqueueMiddleware []EnqueueMiddleware

	// ErrorHandler, when set, is told of every job whose worker failed or
	// panicked, and may decide its outcome (see ErrorHandler). Default
	// none.
	ErrorHandler ErrorHandler

	// Hooks are called as the client starts and stops and as jobs start,
	// finish and end for good (see Hooks). Default none.
	Hooks Hooks

	// Webhooks are notified of jobs' final outcomes by HTTP POST, each
	// notification a job of its own enqueued with the outcome (see
	// Webhook). Default none.
	Webhooks []Webhook

	// Encryption encrypts the payloads of some topics at rest (see
	// Encryption). Default none.
	Encryption Encryption

	// Metrics configures the metrics store Client.Metrics reads (see
	// MetricsConfig). Default: written every 10 s, kept 8 days.
	Metrics MetricsConfig

	// crypt is Encryption made ready, by withDefaults.
	crypt *crypt
}

var queueNameRE = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)

// minLeaseDuration is the shortest lease accepted: a heartbeat every third
// of it must still be able to reach the database.
const minLeaseDuration = 100 * time.Millisecond

// minProgressInterval is the shortest ProgressInterval accepted.
const minProgressInterval = 10 * time.Millisecond

// checkQueues validates Queues: valid names, no negative worker counts, and
// at least one queue with workers for a client that has workers.
func (cfg *Config) checkQueues() error {
	worked := false
	for name, q := range cfg.Queues {
		if !queueNameRE.MatchString(name) {
			return &ConfigError{Field: fmt.Sprintf("Queues[%q]", name),
				Reason: "queue names are 1 to 128 letters, digits, or _ . : -"}
		}
		if q.MaxWorkers < 0 {
			return &ConfigError{Field: fmt.Sprintf("Queues[%q].MaxWorkers", name), Reason: "must not be negative"}
		}
		worked = worked || q.MaxWorkers > 0
	}
	if len(cfg.Workers.units) > 0 && !worked {
		return &ConfigError{Field: "Queues", Reason: "a client with workers needs a queue with MaxWorkers >= 1"}
	}
	return nil
}

// withDefaults returns a copy of c with defaults filled in, or a
// *ConfigError naming the first invalid field.
func (c *Config) withDefaults() (*Config, error) {
	var cfg Config
	if c != nil {
		cfg = *c
	}
	// The client keeps its own copy of the workers: adding one to the
	// Workers after NewClient does not change the client.
	workers := NewWorkers()
	if cfg.Workers != nil {
		maps.Copy(workers.units, cfg.Workers.units)
	}
	cfg.Workers = workers
	if cfg.Queues == nil {
		cfg.Queues = map[string]QueueConfig{QueueDefault: {MaxWorkers: DefaultMaxWorkers}}
	}
	if err := cfg.checkQueues(); err != nil {
		return nil, err
	}
	durations := []struct {
		name     string
		v        *time.Duration
		def, min time.Duration
	}{
		{"PollInterval", &cfg.PollInterval, DefaultPollInterval, time.Millisecond},
		{"LeaseDuration", &cfg.LeaseDuration, DefaultLeaseDuration, minLeaseDuration},
		{"ProgressInterval", &cfg.ProgressInterval, DefaultProgressInterval, minProgressInterval},
	}
	for _, d := range durations {
		*d.v = orDefault(*d.v, d.def)
		if *d.v < d.min {
			return nil, &ConfigError{Field: d.name, Reason: fmt.Sprintf("must be at least %s", d.min)}
		}
	}
	if cfg.HeartbeatInterval < 0 || cfg.HeartbeatInterval >= cfg.LeaseDuration && cfg.HeartbeatInterval != 0 {
		return nil, &ConfigError{Field: "HeartbeatInterval", Reason: "must be positive and shorter than LeaseDuration"}
	}
	cfg.HeartbeatInterval = orDefault(cfg.HeartbeatInterval, cfg.LeaseDuration/3)
	if cfg.RescueInterval < 0 || cfg.RescueInterval > 0 && cfg.RescueInterval < time.Millisecond {
		return nil, &ConfigError{Field: "RescueInterval", Reason: "must be at least 1ms"}
	}
	cfg.RescueInterval = orDefault(cfg.RescueInterval, cfg.LeaseDuration/2)
	cfg.JobTimeout = orDefault(cfg.JobTimeout, DefaultJobTimeout)
	if cfg.MaxRetries < NoRetries {
		return nil, &ConfigError{Field: "MaxRetries", Reason: "must be >= 0, or NoRetries"}
	}
	cfg.MaxRetries = orDefault(cfg.MaxRetries, DefaultMaxRetries)
	if err := cfg.Retention.fill(); err != nil {
		return nil, err
	}
	if err := cfg.ChangeFeed.fill(); err != nil {
		return nil, err
	}
	if err := cfg.Metrics.fill(); err != nil {
		return nil, err
	}
	if cfg.MaxPayloadBytes < 0 {
		return nil, &ConfigError{Field: "MaxPayloadBytes", Reason: "must not be negative"}
	}
	cfg.MaxPayloadBytes = orDefault(cfg.MaxPayloadBytes, DefaultMaxPayloadBytes)
	if cfg.RetryPolicy == nil {
		cfg.RetryPolicy = SquareRetryPolicy{}
	}
	if cfg.ClientID == "" {
		host, _ := os.Hostname()
		cfg.ClientID = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.NewJobID == nil {
		cfg.NewJobID = newUUIDv7
	}
	if err := cfg.JobLogs.fill(); err != nil {
		return nil, err
	}
	if err := cfg.fillWebhooks(); err != nil {
		return nil, err
	}
	var err error
	if cfg.crypt, err = newCrypt(&cfg); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// now returns the current time by cfg's Clock, at the precision drivers
// store.
func (cfg *Config) now() time.Time {
	return cfg.Clock().UTC().Truncate(time.Microsecond)
}

// retries resolves a stored max-retries value: NoRetries becomes 0.
func retries(n int) int { return max(n, 0) }

func newUUIDv7() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}

// randomSuffix returns a short random hex string.
func randomSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
