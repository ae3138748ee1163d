package sluice_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cenkalti/backoff/v4"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// The fuzz targets run from their seed corpora (testdata/fuzz) in every go
// test, and search further with go test -fuzz.

// FuzzConfig checks NewClient's validation against the rules each Config
// field's documentation states: an invalid field is an error matching
// ErrInvalidConfig that names it, and a valid Config is accepted.
func FuzzConfig(f *testing.F) {
	f.Add("default", 10, int64(0), int64(0), int64(0), int64(0), 0, 0)
	f.Add("q.1:a-b_c", 1, int64(time.Millisecond), int64(100*time.Millisecond), int64(33*time.Millisecond), int64(time.Millisecond), -1, 1)
	f.Add("", 1, int64(0), int64(0), int64(0), int64(0), 0, 0)
	f.Add("bad name", 1, int64(0), int64(0), int64(0), int64(0), 0, 0)
	f.Add("q", 0, int64(0), int64(0), int64(0), int64(0), 0, 0)
	f.Add("q", -1, int64(-1), int64(99*time.Millisecond), int64(0), int64(0), -2, -1)
	f.Add("q", 3, int64(0), int64(time.Second), int64(time.Second), int64(999*time.Microsecond), 5, 5)
	db, err := sqlitedriver.Open(filepath.Join(f.TempDir(), "jobs.db"))
	require.NoError(f, err)
	f.Cleanup(func() { _ = db.Close() })
	d := sqlitedriver.New(db)
	queueRE := regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)
	f.Fuzz(func(t *testing.T, queue string, maxWorkers int, poll, lease, heartbeat, rescue int64, maxRetries, maxPayload int) {
		cfg := &sluice.Config{
			Workers:           workers(func(context.Context, *sluice.Job[noteArgs]) error { return nil }),
			Queues:            map[string]sluice.QueueConfig{queue: {MaxWorkers: maxWorkers}},
			PollInterval:      time.Duration(poll),
			LeaseDuration:     time.Duration(lease),
			HeartbeatInterval: time.Duration(heartbeat),
			RescueInterval:    time.Duration(rescue),
			MaxRetries:        maxRetries,
			MaxPayloadBytes:   maxPayload,
			SkipMigrations:    true,
		}
		effLease := time.Duration(lease)
		if effLease == 0 {
			effLease = sluice.DefaultLeaseDuration
		}
		bad := map[string]bool{
			"Queues":            !queueRE.MatchString(queue) || maxWorkers <= 0,
			"PollInterval":      poll != 0 && poll < int64(time.Millisecond),
			"LeaseDuration":     lease != 0 && lease < int64(100*time.Millisecond),
			"HeartbeatInterval": heartbeat < 0 || heartbeat != 0 && time.Duration(heartbeat) >= effLease,
			"RescueInterval":    rescue != 0 && rescue < int64(time.Millisecond),
			"MaxRetries":        maxRetries < sluice.NoRetries,
			"MaxPayloadBytes":   maxPayload < 0,
		}
		valid := true
		for _, b := range bad {
			valid = valid && !b
		}
		c, err := sluice.NewClient(d, cfg)
		if valid {
			require.NoError(t, err)
			require.NotNil(t, c)
			return
		}
		require.ErrorIs(t, err, sluice.ErrInvalidConfig)
		var ce *sluice.ConfigError
		require.ErrorAs(t, err, &ce)
		field := ce.Field
		if m := regexp.MustCompile(`^Queues\[`).FindString(field); m != "" {
			field = "Queues"
		}
		require.True(t, bad[field], "%v rejected for %s, which is valid", err, ce.Field)
	})
}

// textArgs carry arbitrary text.
type textArgs struct {
	S string `json:"s"`
}

func (textArgs) Topic() string { return "text" }

// FuzzEnqueueOptions enqueues a job with arbitrary options and arguments:
// it is either stored exactly as asked, or refused with a typed error and
// nothing written. A unique key returns the live job the second time.
func FuzzEnqueueOptions(f *testing.F) { fuzzEnqueueOptions(f, sqliteKit(f)) }

// FuzzEnqueueOptionsPostgres is FuzzEnqueueOptions on Postgres, which
// stores neither NUL characters nor invalid UTF-8, and whose integers and
// times have ranges of their own. Its corpus is a copy of
// FuzzEnqueueOptions's.
func FuzzEnqueueOptionsPostgres(f *testing.F) { fuzzEnqueueOptions(f, postgresKit(f)) }

func fuzzEnqueueOptions[TTx any](f *testing.F, k *kit[TTx]) {
	f.Add("", 0, 0, "", int64(0), "hello")
	f.Add("other", -32768, sluice.NoRetries, "key-1", int64(1), "é\x00")
	f.Add("nope", 32768, -2, "", int64(-1), "")
	f.Add("default", 5, 1<<30, "k", int64(math.MaxInt64/2), "\xff\xfe")
	f.Add("default", 1, 0, "\xffkey", int64(0), "x")
	f.Add("default", 0, 1<<30+1, "k\x00", int64(1767225600000000), string(make([]byte, 300)))
	c, err := sluice.NewClient(k.driver, &sluice.Config{
		Queues:          map[string]sluice.QueueConfig{sluice.QueueDefault: {}, "other": {}},
		MaxPayloadBytes: 256,
	})
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, queue string, priority, maxRetries int, uniqueKey string, runAtMicro int64, text string) {
		opts := &sluice.EnqueueOptions{Queue: queue, Priority: priority, MaxRetries: maxRetries, UniqueKey: uniqueKey}
		if runAtMicro != 0 {
			opts.RunAt = time.UnixMicro(runAtMicro)
		}
		before := k.count(t)
		res, err := c.Enqueue(t.Context(), textArgs{S: text}, opts)
		if !utf8.ValidString(uniqueKey) || strings.ContainsRune(uniqueKey, 0) {
			// Postgres stores neither; every driver refuses them alike. The
			// job may be refused first for something else (an unknown
			// queue, say), so the key is tried again on its own.
			require.Error(t, err)
			_, keyErr := c.Enqueue(t.Context(), textArgs{}, &sluice.EnqueueOptions{UniqueKey: uniqueKey})
			require.ErrorIs(t, keyErr, sluice.ErrInvalidOptions)
		}
		if err != nil {
			require.True(t, errors.Is(err, sluice.ErrUnknownQueue) || errors.Is(err, sluice.ErrInvalidOptions) ||
				errors.Is(err, sluice.ErrInvalidArgs) || errors.Is(err, sluice.ErrPayloadTooLarge), "untyped error: %v", err)
			require.Equal(t, before, k.count(t), "a refused job wrote something")
			return
		}
		row, err := c.Get(t.Context(), res.Job.ID)
		require.NoError(t, err)
		require.Equal(t, uniqueKey, row.UniqueKey)
		if res.Duplicate {
			require.NotEmpty(t, uniqueKey)
			require.Equal(t, before, k.count(t))
			return
		}
		require.Equal(t, before+1, k.count(t))
		wantQueue := queue
		if wantQueue == "" {
			wantQueue = sluice.QueueDefault
		}
		require.Equal(t, wantQueue, row.Queue)
		require.Equal(t, priority, row.Priority)
		switch {
		case maxRetries == sluice.NoRetries:
			require.Zero(t, row.MaxRetries)
		case maxRetries == 0:
			require.Equal(t, sluice.DefaultMaxRetries, row.MaxRetries)
		default:
			require.Equal(t, maxRetries, row.MaxRetries)
		}
		if runAtMicro != 0 {
			require.True(t, row.RunAt.Equal(time.UnixMicro(runAtMicro)), "run_at %s, want %s", row.RunAt, time.UnixMicro(runAtMicro))
		}
		var got, want textArgs
		require.NoError(t, json.Unmarshal(row.Payload, &got))
		b, err := json.Marshal(textArgs{S: text})
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &want))
		require.Equal(t, want, got, "the payload decodes to the arguments enqueued")
		if uniqueKey != "" {
			again, err := c.Enqueue(t.Context(), textArgs{S: text}, opts)
			require.NoError(t, err)
			require.True(t, again.Duplicate)
			require.Equal(t, res.Job.ID, again.Job.ID)
		}
	})
}

// FuzzRetryPolicies checks the retry policies over every attempt a job can
// reach: a retry is never scheduled before the failure, the square policy
// waits attempt²×unit (as long as a Duration allows) and grows with the
// attempt, and the exponential policy stays within its jittered cap.
func FuzzRetryPolicies(f *testing.F) {
	f.Add(1, int64(0), int64(time.Second), 2.0, 0.5, int64(time.Hour))
	f.Add(3, int64(time.Minute), int64(0), 0.0, 0.0, int64(0))
	f.Add(1<<30, int64(time.Millisecond), int64(time.Millisecond), 1.5, 0.99, int64(24*time.Hour))
	f.Add(49999, int64(time.Hour), int64(time.Hour), 10.0, -1.0, int64(90*24*time.Hour))
	f.Add(2, int64(-5), int64(10*time.Second), 0.5, 0.25, int64(time.Second))
	at := time.Date(2026, 1, 8, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, attempt int, unit, initial int64, mult, jitter float64, maxDelay int64) {
		attempt = 1 + int(uint(attempt)%(1<<30+1)) // the attempts a job can reach
		job := &sluice.JobRow{Attempt: attempt}
		sq := sluice.SquareRetryPolicy{Unit: time.Duration(unit)}
		d := sq.NextRetry(job, at).Sub(at)
		require.Positive(t, d)
		next := sq.NextRetry(&sluice.JobRow{Attempt: attempt + 1}, at).Sub(at)
		require.GreaterOrEqual(t, next, d, "attempt %d waits %s, attempt %d %s", attempt, d, attempt+1, next)
		u := time.Duration(unit)
		if u <= 0 {
			u = time.Minute
		}
		if n := time.Duration(attempt); n <= math.MaxInt64/n/u {
			require.Equal(t, n*n*u, d)
		}

		if math.IsNaN(mult) || math.IsNaN(jitter) || jitter >= 1 {
			return // jitter beyond 1 may ask for a negative delay
		}
		const century = 100 * 365 * 24 * time.Hour
		ex := sluice.ExponentialRetryPolicy{
			Initial:    time.Duration(uint64(initial) % uint64(century)),
			Multiplier: mult,
			Jitter:     jitter,
			Max:        time.Duration(uint64(maxDelay) % uint64(century)),
		}
		d = ex.NextRetry(job, at).Sub(at)
		require.GreaterOrEqual(t, d, time.Duration(0))
		capped := max(ex.Max, ex.Initial)
		if ex.Max == 0 {
			capped = max(time.Hour, ex.Initial)
		}
		if ex.Initial == 0 {
			capped = max(capped, time.Second)
		}
		j := max(jitter, 0)
		if jitter == 0 {
			j = 0.5
		}
		require.LessOrEqual(t, float64(d), float64(capped)*(1+j)+1)

		bo := sluice.BackOffRetryPolicy{New: func() backoff.BackOff { return backoff.NewConstantBackOff(u) }}
		require.Equal(t, u, bo.NextRetry(&sluice.JobRow{Attempt: min(attempt, 1000)}, at).Sub(at))
	})
}
