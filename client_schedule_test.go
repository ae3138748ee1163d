package sluice_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/scheduletest"
)

// digest is a valid stored schedule.
func digest() *sluice.Schedule {
	return &sluice.Schedule{Name: "nightly-digest", Cron: "0 3 * * *", TimeZone: "Europe/Paris", Topic: "note",
		Payload: json.RawMessage(`{"n": 7}`)}
}

func TestCreateScheduleRejectsBadInputAndWritesNothing(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testCreateScheduleRejectsBadInputAndWritesNothing[*sql.Tx], testCreateScheduleRejectsBadInputAndWritesNothing[pgx.Tx])
}

func testCreateScheduleRejectsBadInputAndWritesNothing[TTx any](t *testing.T, k *kit[TTx]) {
	c := k.client(t, &sluice.Config{MaxPayloadBytes: 64})
	ctx := t.Context()
	for _, tc := range []struct {
		name  string
		edit  func(s *sluice.Schedule)
		field string
		is    error
	}{
		{"nil", nil, "Schedule", nil},
		{"no name", func(s *sluice.Schedule) { s.Name = "" }, "Name", nil},
		{"long name", func(s *sluice.Schedule) { s.Name = strings.Repeat("n", 201) }, "Name", nil},
		{"NUL in name", func(s *sluice.Schedule) { s.Name = "a\x00b" }, "Name", nil},
		{"bad cron", func(s *sluice.Schedule) { s.Cron = "0 3 * *" }, "Cron", nil},
		{"never fires", func(s *sluice.Schedule) { s.Cron = "0 0 30 2 *" }, "Cron", nil},
		{"zone in cron", func(s *sluice.Schedule) { s.Cron = "TZ=UTC 0 3 * * *" }, "Cron", nil},
		{"unknown zone", func(s *sluice.Schedule) { s.TimeZone = "Europe/Atlantis" }, "TimeZone", nil},
		{"catch-up", func(s *sluice.Schedule) { s.CatchUp = "twice" }, "CatchUp", nil},
		{"no topic", func(s *sluice.Schedule) { s.Topic = "" }, "Topic", sluice.ErrEmptyTopic},
		{"bad topic", func(s *sluice.Schedule) { s.Topic = "\xff" }, "Topic", sluice.ErrInvalidArgs},
		{"unknown queue", func(s *sluice.Schedule) { s.Queue = "mail" }, "Queue", sluice.ErrUnknownQueue},
		{"payload not JSON", func(s *sluice.Schedule) { s.Payload = json.RawMessage(`{"n":`) }, "Payload", sluice.ErrInvalidArgs},
		{"payload NUL", func(s *sluice.Schedule) { s.Payload = json.RawMessage(`"\u0000"`) }, "Payload", sluice.ErrInvalidArgs},
		{"payload too large", func(s *sluice.Schedule) { s.Payload = json.RawMessage(`"` + strings.Repeat("x", 64) + `"`) },
			"Payload", sluice.ErrPayloadTooLarge},
		{"priority", func(s *sluice.Schedule) { s.Priority = 1 << 20 }, "Priority", sluice.ErrInvalidOptions},
		{"retries", func(s *sluice.Schedule) { s.MaxRetries = -2 }, "MaxRetries", sluice.ErrInvalidOptions},
	} {
		var s *sluice.Schedule
		if tc.edit != nil {
			s = digest()
			tc.edit(s)
		}
		got, err := c.CreateSchedule(ctx, s)
		require.Nil(t, got, tc.name)
		require.ErrorIs(t, err, sluice.ErrInvalidSchedule, tc.name)
		var se *sluice.ScheduleError
		require.ErrorAs(t, err, &se, tc.name)
		require.Equal(t, tc.field, se.Field, "%s: %v", tc.name, err)
		if tc.is != nil {
			require.ErrorIs(t, err, tc.is, tc.name)
		}
	}
	_, err := c.CreateSchedule(ctx, digest())
	require.NoError(t, err)
	again := digest()
	again.Cron = "@hourly"
	_, err = c.CreateSchedule(ctx, again)
	require.ErrorIs(t, err, sluice.ErrDuplicateSchedule)
	list, err := c.ListSchedules(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, "0 3 * * *", list[0].Cron, "the duplicate changed nothing")
}

func TestScheduleCRUD(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testScheduleCRUD[*sql.Tx], testScheduleCRUD[pgx.Tx])
}

func testScheduleCRUD[TTx any](t *testing.T, k *kit[TTx]) {
	clock := scheduletest.NewClock(time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC))
	c := k.client(t, &sluice.Config{Clock: clock.Now})
	ctx := t.Context()
	created, err := c.CreateSchedule(ctx, digest())
	require.NoError(t, err)
	// 03:00 in Paris is 01:00 UTC in May.
	require.Equal(t, time.Date(2026, 5, 5, 1, 0, 0, 0, time.UTC), created.NextRunAt)
	require.Equal(t, sluice.CatchUpOnce, created.CatchUp)
	require.Equal(t, sluice.QueueDefault, created.Queue)
	require.JSONEq(t, `{"n": 7}`, string(created.Payload))
	require.True(t, created.LastRunAt.IsZero())
	got, err := c.GetSchedule(ctx, "nightly-digest")
	require.NoError(t, err)
	require.Equal(t, created, got)

	// A change of payload keeps the next tick; one of cron moves it.
	clock.Add(time.Hour)
	s := *got
	s.Payload = json.RawMessage(`{"n": 8}`)
	updated, err := c.UpdateSchedule(ctx, &s)
	require.NoError(t, err)
	require.Equal(t, created.NextRunAt, updated.NextRunAt)
	require.Equal(t, created.CreatedAt, updated.CreatedAt)
	require.Equal(t, clock.Now(), updated.UpdatedAt)
	s.Cron = "@hourly"
	updated, err = c.UpdateSchedule(ctx, &s)
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC), updated.NextRunAt)

	// Disabled, it has no next tick; enabled again, its next is after now.
	s.Disabled = true
	updated, err = c.UpdateSchedule(ctx, &s)
	require.NoError(t, err)
	require.True(t, updated.NextRunAt.IsZero())
	clock.Add(3 * time.Hour)
	s.Disabled = false
	updated, err = c.UpdateSchedule(ctx, &s)
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 5, 4, 15, 0, 0, 0, time.UTC), updated.NextRunAt)

	s.Cron = "bad"
	_, err = c.UpdateSchedule(ctx, &s)
	require.ErrorIs(t, err, sluice.ErrInvalidSchedule)
	missing := digest()
	missing.Name = "missing"
	_, err = c.UpdateSchedule(ctx, missing)
	require.ErrorIs(t, err, sluice.ErrScheduleNotFound)

	deleted, err := c.DeleteSchedule(ctx, "nightly-digest")
	require.NoError(t, err)
	require.Equal(t, "@hourly", deleted.Cron)
	_, err = c.GetSchedule(ctx, "nightly-digest")
	require.ErrorIs(t, err, sluice.ErrScheduleNotFound)
	_, err = c.DeleteSchedule(ctx, "nightly-digest")
	require.ErrorIs(t, err, sluice.ErrScheduleNotFound)
	list, err := c.ListSchedules(ctx)
	require.NoError(t, err)
	require.Empty(t, list)
}

func TestScheduleTxTwinsCommitOrRollBackWithTheCaller(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testScheduleTxTwinsCommitOrRollBackWithTheCaller[*sql.Tx], testScheduleTxTwinsCommitOrRollBackWithTheCaller[pgx.Tx])
}

func testScheduleTxTwinsCommitOrRollBackWithTheCaller[TTx any](t *testing.T, k *kit[TTx]) {
	c := k.client(t, nil)
	ctx := t.Context()
	names := func() []string {
		list, err := c.ListSchedules(ctx)
		require.NoError(t, err)
		var out []string
		for _, s := range list {
			out = append(out, s.Name+" "+s.Cron)
		}
		return out
	}
	for _, commit := range []bool{false, true} {
		tx, err := k.begin(ctx)
		require.NoError(t, err)
		_, err = c.CreateScheduleTx(ctx, tx, digest())
		require.NoError(t, err)
		k.end(t, tx, commit)
	}
	require.Equal(t, []string{"nightly-digest 0 3 * * *"}, names())
	for _, commit := range []bool{false, true} {
		tx, err := k.begin(ctx)
		require.NoError(t, err)
		s := digest()
		s.Cron = "@daily"
		_, err = c.UpdateScheduleTx(ctx, tx, s)
		require.NoError(t, err)
		k.end(t, tx, commit)
		if !commit {
			require.Equal(t, []string{"nightly-digest 0 3 * * *"}, names())
		}
	}
	require.Equal(t, []string{"nightly-digest @daily"}, names())
	for _, commit := range []bool{false, true} {
		tx, err := k.begin(ctx)
		require.NoError(t, err)
		_, err = c.DeleteScheduleTx(ctx, tx, "nightly-digest")
		require.NoError(t, err)
		k.end(t, tx, commit)
		if !commit {
			require.Len(t, names(), 1)
		}
	}
	require.Empty(t, names())
	var nilTx TTx
	_, err := c.CreateScheduleTx(ctx, nilTx, digest())
	require.ErrorIs(t, err, sluice.ErrNilTx)
	_, err = c.UpdateScheduleTx(ctx, nilTx, digest())
	require.ErrorIs(t, err, sluice.ErrNilTx)
	_, err = c.DeleteScheduleTx(ctx, nilTx, "x")
	require.ErrorIs(t, err, sluice.ErrNilTx)
}

func TestNewClientRejectsBadPeriodicJobs(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testNewClientRejectsBadPeriodicJobs[*sql.Tx], testNewClientRejectsBadPeriodicJobs[pgx.Tx])
}

func testNewClientRejectsBadPeriodicJobs[TTx any](t *testing.T, k *kit[TTx]) {
	for _, tc := range []struct {
		name  string
		jobs  []sluice.PeriodicJob
		field string
	}{
		{"no args", []sluice.PeriodicJob{{Cron: "@hourly"}}, "PeriodicJobs[0].Args"},
		{"bad cron", []sluice.PeriodicJob{{Cron: "@often", Args: noteArgs{}}}, "PeriodicJobs[0].Cron"},
		{"unknown zone", []sluice.PeriodicJob{{Cron: "@hourly", TimeZone: "Nowhere/Nothing", Args: noteArgs{}}},
			"PeriodicJobs[0].TimeZone"},
		{"same name", []sluice.PeriodicJob{{Cron: "@hourly", Args: noteArgs{}}, {Cron: "@daily", Args: noteArgs{N: 1}}},
			"PeriodicJobs[1].Name"},
		{"catch-up", []sluice.PeriodicJob{{Cron: "@hourly", Args: noteArgs{}, CatchUp: "all"}}, "PeriodicJobs[0].CatchUp"},
		{"unique key", []sluice.PeriodicJob{{Cron: "@hourly", Args: noteArgs{}, Options: &sluice.EnqueueOptions{UniqueKey: "k"}}},
			"PeriodicJobs[0].Options"},
		{"unknown queue", []sluice.PeriodicJob{{Cron: "@hourly", Args: noteArgs{}, Options: &sluice.EnqueueOptions{Queue: "q"}}},
			"PeriodicJobs[0].Args"},
	} {
		_, err := sluice.NewClient(k.driver, &sluice.Config{PeriodicJobs: tc.jobs})
		var ce *sluice.ConfigError
		require.ErrorAs(t, err, &ce, tc.name)
		require.ErrorIs(t, err, sluice.ErrInvalidConfig, tc.name)
		require.Equal(t, tc.field, ce.Field, "%s: %v", tc.name, err)
	}
	// Two jobs of one topic, named apart, are fine.
	_, err := sluice.NewClient(k.driver, &sluice.Config{PeriodicJobs: []sluice.PeriodicJob{
		{Cron: "@hourly", Args: noteArgs{}}, {Name: "note-daily", Cron: "@daily", Args: noteArgs{N: 1}},
	}})
	require.NoError(t, err)
}

// A scheduled job is announced as any enqueued job is, and woken at once
// in its own client.
func TestScheduledJobIsEnqueuedEventAndRuns(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testScheduledJobIsEnqueuedEventAndRuns[*sql.Tx], testScheduledJobIsEnqueuedEventAndRuns[pgx.Tx])
}

func testScheduledJobIsEnqueuedEventAndRuns[TTx any](t *testing.T, k *kit[TTx]) {
	clock := scheduletest.NewClock(time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC))
	ran := make(chan *sluice.Job[noteArgs], 1)
	c, err := sluice.NewClient(k.driver, &sluice.Config{
		Workers: workers(func(_ context.Context, job *sluice.Job[noteArgs]) error { ran <- job; return nil }),
		Clock:   clock.Now, PollInterval: 5 * time.Millisecond, Logger: quiet,
	})
	require.NoError(t, err)
	sub := c.Subscribe(sluice.EventEnqueued)
	defer sub.Close()
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, c.Stop(context.Background())) })
	_, err = c.CreateSchedule(t.Context(), &sluice.Schedule{Name: "minutely", Cron: "* * * * *", Topic: "note",
		Payload: json.RawMessage(`{"n": 5}`), Priority: 3})
	require.NoError(t, err)
	clock.Add(time.Minute)
	select {
	case ev := <-sub.C:
		require.Equal(t, "schedule:minutely:2026-05-04T10:01:00Z", ev.Job.UniqueKey)
		require.Equal(t, 3, ev.Job.Priority)
	case <-time.After(10 * time.Second):
		t.Fatal("no enqueued event")
	}
	select {
	case job := <-ran:
		require.Equal(t, 5, job.Args.N)
	case <-time.After(10 * time.Second):
		t.Fatal("the scheduled job never ran")
	}
	s, err := c.GetSchedule(t.Context(), "minutely")
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 5, 4, 10, 1, 0, 0, time.UTC), s.LastRunAt)
	require.NotEmpty(t, s.LastJobID)
}
