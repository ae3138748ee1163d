// Package scheduletest holds the client-level schedule tests every driver
// runs: several clients over one database, as several processes would
// be, ticking the same schedules under a clock the test moves.
package scheduletest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
)

// Clock is a clock that stands still until the test moves it.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock standing at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock on by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Args are the scheduled jobs' arguments.
type Args struct {
	N int `json:"n"`
}

// Topic names the scheduled jobs.
func (Args) Topic() string { return "tick" }

// start is when every test's clock starts: a Monday, 10:00 UTC.
var start = time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)

// Run runs every test of the package; newDriver returns a new driver over
// the test's one database, on a handle of its own, as another process
// would have.
func Run[TTx any](t *testing.T, newDriver func(t *testing.T) func() driver.Driver[TTx]) {
	t.Run("OncePerTick", func(t *testing.T) { t.Parallel(); OncePerTick(t, newDriver(t)) })
	t.Run("CatchUp", func(t *testing.T) { t.Parallel(); CatchUp(t, newDriver(t)) })
	t.Run("RunOnStart", func(t *testing.T) { t.Parallel(); RunOnStart(t, newDriver(t)) })
}

// client returns a started client over d with a worker for Args, the
// given periodic jobs and clock, stopped at cleanup.
func client[TTx any](t *testing.T, d driver.Driver[TTx], clock *Clock, periodic ...sluice.PeriodicJob) *sluice.Client[TTx] {
	t.Helper()
	c := newClient(t, d, clock, periodic...)
	require.NoError(t, c.Start(t.Context()))
	return c
}

// newClient is client, not started yet.
func newClient[TTx any](t *testing.T, d driver.Driver[TTx], clock *Clock, periodic ...sluice.PeriodicJob) *sluice.Client[TTx] {
	t.Helper()
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(context.Context, *sluice.Job[Args]) error { return nil }))
	c, err := sluice.NewClient(d, &sluice.Config{
		Workers: workers, Clock: clock.Now, PollInterval: 5 * time.Millisecond, PeriodicJobs: periodic,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, c.Stop(ctx))
	})
	return c
}

// jobs returns the unique keys of the scheduled jobs, each with how many
// jobs have it.
func jobs[TTx any](t *testing.T, c *sluice.Client[TTx]) map[string]int {
	t.Helper()
	res, err := c.List(t.Context(), &sluice.ListFilter{JobFilter: sluice.JobFilter{Topics: []string{"tick"}},
		Limit: sluice.MaxListLimit})
	require.NoError(t, err)
	keys := make(map[string]int)
	for _, j := range res.Jobs {
		keys[j.UniqueKey]++
	}
	return keys
}

// waitJob waits until a job with the unique key exists.
func waitJob[TTx any](t *testing.T, c *sluice.Client[TTx], key string) {
	t.Helper()
	require.Eventually(t, func() bool { return jobs(t, c)[key] > 0 }, 10*time.Second, 2*time.Millisecond,
		"no job %s", key)
}

// OncePerTick runs three clients over one database ticking one schedule
// every second for twenty seconds of the clock: each tick makes exactly
// one job, whichever client enqueues it.
func OncePerTick[TTx any](t *testing.T, newDriver func() driver.Driver[TTx]) {
	clock := NewClock(start)
	cs := []*sluice.Client[TTx]{client(t, newDriver(), clock), client(t, newDriver(), clock), client(t, newDriver(), clock)}
	_, err := cs[0].CreateSchedule(t.Context(), &sluice.Schedule{Name: "every-second", Cron: "* * * * * *",
		Topic: "tick", Payload: json.RawMessage(`{"n": 1}`)})
	require.NoError(t, err)
	want := make(map[string]int)
	for range 20 {
		clock.Add(time.Second)
		key := "schedule:every-second:" + clock.Now().Format(time.RFC3339)
		want[key] = 1
		waitJob(t, cs[2], key)
	}
	// Let every client look again before counting.
	time.Sleep(50 * time.Millisecond)
	require.Equal(t, want, jobs(t, cs[1]))
	s, err := cs[1].GetSchedule(t.Context(), "every-second")
	require.NoError(t, err)
	require.Equal(t, clock.Now(), s.LastRunAt)
	require.Equal(t, clock.Now().Add(time.Second), s.NextRunAt)
}

// CatchUp moves the clock an hour and two minutes at once, as if every
// client had been down: a schedule that catches up once enqueues the
// latest missed tick, one that skips enqueues none, and neither makes a
// burst.
func CatchUp[TTx any](t *testing.T, newDriver func() driver.Driver[TTx]) {
	clock := NewClock(start)
	c := client(t, newDriver(), clock)
	for _, s := range []*sluice.Schedule{
		{Name: "second-once", Cron: "* * * * * *"}, {Name: "second-skip", Cron: "* * * * * *", CatchUp: sluice.CatchUpSkip},
		{Name: "hour-once", Cron: "0 * * * *"}, {Name: "hour-skip", Cron: "0 * * * *", CatchUp: sluice.CatchUpSkip},
	} {
		s.Topic = "tick"
		_, err := c.CreateSchedule(t.Context(), s)
		require.NoError(t, err)
	}
	clock.Add(time.Hour + 2*time.Minute) // 11:02:00
	waitJob(t, c, "schedule:second-once:2026-05-04T11:02:00Z")
	waitJob(t, c, "schedule:hour-once:2026-05-04T11:00:00Z")
	next := map[string]time.Time{
		"second-once": start.Add(62*time.Minute + time.Second), "second-skip": start.Add(62*time.Minute + time.Second),
		"hour-once": start.Add(2 * time.Hour), "hour-skip": start.Add(2 * time.Hour),
	}
	require.Eventually(t, func() bool {
		list, err := c.ListSchedules(t.Context())
		require.NoError(t, err)
		for _, s := range list {
			if !s.NextRunAt.Equal(next[s.Name]) {
				return false
			}
		}
		return true
	}, 10*time.Second, 2*time.Millisecond, "the skipping schedules never moved on")
	require.Equal(t, map[string]int{
		"schedule:second-once:2026-05-04T11:02:00Z": 1, "schedule:hour-once:2026-05-04T11:00:00Z": 1,
	}, jobs(t, c))
	skipped, err := c.GetSchedule(t.Context(), "hour-skip")
	require.NoError(t, err)
	require.True(t, skipped.LastRunAt.IsZero())
	require.Empty(t, skipped.LastJobID)
}

// RunOnStart starts two clients at once with a daily periodic job that
// runs on start: it runs once, and not again when a third client starts
// later; the next day it runs once more.
func RunOnStart[TTx any](t *testing.T, newDriver func() driver.Driver[TTx]) {
	clock := NewClock(start)
	pj := sluice.PeriodicJob{Name: "report", Cron: "@daily", Args: Args{N: 3}, RunOnStart: true}
	cs := []*sluice.Client[TTx]{newClient(t, newDriver(), clock, pj), newClient(t, newDriver(), clock, pj)}
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() { errs[i] = c.Start(t.Context()) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	first := "periodic:report:2026-05-04T10:00:00Z"
	waitJob(t, cs[0], first)
	late := client(t, newDriver(), clock, pj)
	time.Sleep(50 * time.Millisecond)
	require.Equal(t, map[string]int{first: 1}, jobs(t, late))

	clock.Add(14 * time.Hour) // midnight
	second := "periodic:report:2026-05-05T00:00:00Z"
	waitJob(t, late, second)
	time.Sleep(50 * time.Millisecond)
	require.Equal(t, map[string]int{first: 1, second: 1}, jobs(t, cs[1]))
	// Stored schedules do not list periodic jobs.
	list, err := late.ListSchedules(t.Context())
	require.NoError(t, err)
	require.Empty(t, list)
}
