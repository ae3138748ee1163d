package drivertest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func scheduleCases[TTx any]() []testCase[TTx] {
	return []testCase[TTx]{
		// A schedule reads back as it was stored, at Version 1; names are
		// unique within a kind, not across kinds; a duplicate writes nothing;
		// an unknown name is ErrScheduleNotFound.
		{name: "InsertGet", twin: true, fn: testScheduleInsertGet[TTx]},
		// List sorts by kind and name, selects a kind, and with DueBy only
		// schedules whose next run is set and due by then.
		{name: "List", fn: testScheduleList[TTx]},
		// Update replaces the definition at the version read, keeps the
		// tick state, and matches nothing at another version or name.
		{name: "Update", twin: true, fn: testScheduleUpdate[TTx]},
		// Delete returns the schedule as it was; a second is not found.
		{name: "Delete", twin: true, fn: testScheduleDelete[TTx]},
		// A tick at the version read inserts its job and records it; a tick
		// at an older version writes nothing; a skipped tick moves only the
		// next run; a tick whose unique key a live job holds records that
		// job.
		{name: "Tick", twin: true, fn: testScheduleTick[TTx]},
		// Of many ticks of one version at once, exactly one matches and
		// inserts its job.
		{name: "TickRace", fn: testScheduleTickRace[TTx]},
		// Writes in a transaction that rolls back leave nothing.
		{name: "Rollback", fn: testScheduleRollback[TTx]},
		// Every schedule operation given a cancelled context fails with an
		// error matching context.Canceled and writes nothing.
		{name: "Cancelled", fn: testScheduleCancelled[TTx]},
	}
}

// newSchedule returns a stored schedule due at base, created a minute
// before.
func (h *harness[TTx]) newSchedule(name string) *driver.ScheduleRow {
	return &driver.ScheduleRow{
		Kind: driver.ScheduleStored, Name: name, Cron: "*/5 * * * *", TimeZone: "Europe/Paris",
		Topic: "topic_" + name, Payload: []byte(`{"n": 1}`), Queue: "default", Priority: 2, MaxRetries: 4,
		CatchUp: "once", CreatedAt: h.at(-time.Minute), UpdatedAt: h.at(-time.Minute), NextRunAt: h.base,
	}
}

// requireSchedule requires got to be want, field by field.
func (h *harness[TTx]) requireSchedule(want, got *driver.ScheduleRow) {
	h.t.Helper()
	require.NotNil(h.t, got, "schedule %s", want.Name)
	msg := func(field string) string { return fmt.Sprintf("schedule %s/%s: %s", want.Kind, want.Name, field) }
	require.Equal(h.t, want.Kind, got.Kind, msg("Kind"))
	require.Equal(h.t, want.Name, got.Name, msg("Name"))
	require.Equal(h.t, want.Cron, got.Cron, msg("Cron"))
	require.Equal(h.t, want.TimeZone, got.TimeZone, msg("TimeZone"))
	require.Equal(h.t, want.Topic, got.Topic, msg("Topic"))
	requireJSON(h.t, want.Payload, got.Payload, msg("Payload"))
	require.Equal(h.t, want.Queue, got.Queue, msg("Queue"))
	require.Equal(h.t, want.Priority, got.Priority, msg("Priority"))
	require.Equal(h.t, want.MaxRetries, got.MaxRetries, msg("MaxRetries"))
	require.Equal(h.t, want.Disabled, got.Disabled, msg("Disabled"))
	require.Equal(h.t, want.CatchUp, got.CatchUp, msg("CatchUp"))
	require.Equal(h.t, want.LastJobID, got.LastJobID, msg("LastJobID"))
	require.Equal(h.t, want.Version, got.Version, msg("Version"))
	requireTime(h.t, want.CreatedAt, got.CreatedAt, msg("CreatedAt"))
	requireTime(h.t, want.UpdatedAt, got.UpdatedAt, msg("UpdatedAt"))
	requireTime(h.t, want.NextRunAt, got.NextRunAt, msg("NextRunAt"))
	requireTime(h.t, want.LastRunAt, got.LastRunAt, msg("LastRunAt"))
}

// insertSchedule stores s through ex and returns the stored row.
func (h *harness[TTx]) insertSchedule(ex driver.Executor, s *driver.ScheduleRow) *driver.ScheduleRow {
	h.t.Helper()
	got, err := ex.ScheduleInsert(h.ctx, &driver.ScheduleInsertParams{Schedule: s})
	require.NoError(h.t, err, "ScheduleInsert %s", s.Name)
	return got
}

// getSchedule reads a schedule through the driver's own executor.
func (h *harness[TTx]) getSchedule(kind driver.ScheduleKind, name string) (*driver.ScheduleRow, error) {
	return h.exec().ScheduleGet(h.ctx, &driver.ScheduleGetParams{Kind: kind, Name: name})
}

// requireScheduleStored requires the stored schedule want.Name to be want.
func (h *harness[TTx]) requireScheduleStored(want *driver.ScheduleRow) {
	h.t.Helper()
	got, err := h.getSchedule(want.Kind, want.Name)
	require.NoError(h.t, err, "ScheduleGet %s", want.Name)
	h.requireSchedule(want, got)
}

// requireNoSchedule requires that no schedule kind/name exists.
func (h *harness[TTx]) requireNoSchedule(kind driver.ScheduleKind, name string) {
	h.t.Helper()
	got, err := h.getSchedule(kind, name)
	require.ErrorIs(h.t, err, driver.ErrScheduleNotFound, "ScheduleGet %s", name)
	require.Nil(h.t, got)
}

func testScheduleInsertGet[TTx any](h *harness[TTx], m mode) {
	a := h.newSchedule("a")
	a.LastRunAt, a.LastJobID = h.at(-time.Hour), newID()
	periodic := h.newSchedule("a")
	periodic.Kind, periodic.Disabled, periodic.NextRunAt, periodic.Payload = driver.SchedulePeriodic, true, time.Time{}, []byte(`[]`)
	h.via(m, func(ex driver.Executor) {
		for _, s := range []*driver.ScheduleRow{a, periodic} {
			got := h.insertSchedule(ex, s)
			s.Version = 1
			h.requireSchedule(s, got)
		}
		again := h.newSchedule("a")
		again.Topic = "other"
		got, err := ex.ScheduleInsert(h.ctx, &driver.ScheduleInsertParams{Schedule: again})
		require.ErrorIs(h.t, err, driver.ErrDuplicateSchedule, "a second schedule named a")
		require.Nil(h.t, got)
	})
	h.requireScheduleStored(a)
	h.requireScheduleStored(periodic)
	h.requireNoSchedule(driver.ScheduleStored, "b")
}

func testScheduleList[TTx any](h *harness[TTx], _ mode) {
	b, a, p, off := h.newSchedule("b"), h.newSchedule("a"), h.newSchedule("a"), h.newSchedule("c")
	b.NextRunAt = h.at(time.Minute)
	p.Kind = driver.SchedulePeriodic
	off.Disabled, off.NextRunAt = true, time.Time{}
	for _, s := range []*driver.ScheduleRow{b, a, p, off} {
		h.insertSchedule(h.exec(), s)
		s.Version = 1
	}
	list := func(p *driver.ScheduleListParams, want ...*driver.ScheduleRow) {
		h.t.Helper()
		got, err := h.exec().ScheduleList(h.ctx, p)
		require.NoError(h.t, err, "ScheduleList")
		require.NotNil(h.t, got, "ScheduleList")
		require.Len(h.t, got, len(want), "ScheduleList %+v", p)
		for i := range want {
			h.requireSchedule(want[i], got[i])
		}
	}
	list(&driver.ScheduleListParams{}, p, a, b, off)
	list(&driver.ScheduleListParams{Kind: driver.ScheduleStored}, a, b, off)
	list(&driver.ScheduleListParams{Kind: driver.SchedulePeriodic}, p)
	list(&driver.ScheduleListParams{DueBy: h.base}, p, a)
	list(&driver.ScheduleListParams{Kind: driver.ScheduleStored, DueBy: h.at(time.Minute)}, a, b)
	list(&driver.ScheduleListParams{DueBy: h.at(-time.Second)})
}

func testScheduleUpdate[TTx any](h *harness[TTx], m mode) {
	s := h.newSchedule("a")
	s.LastRunAt, s.LastJobID = h.at(-time.Hour), newID()
	h.insertSchedule(h.exec(), s)
	s.Version = 1
	next := *s
	next.Cron, next.TimeZone, next.Topic, next.Payload, next.Queue = "@hourly", "", "other", []byte(`{"n": 2}`), "mail"
	next.Priority, next.MaxRetries, next.Disabled, next.CatchUp = -3, -1, true, "skip"
	next.UpdatedAt, next.NextRunAt = h.at(time.Second), time.Time{}
	// Fields the update must not change.
	next.CreatedAt, next.LastRunAt, next.LastJobID = h.at(time.Hour), time.Time{}, ""
	h.via(m, func(ex driver.Executor) {
		for _, miss := range []*driver.ScheduleUpdateParams{{Schedule: &next, Version: 2}, {Schedule: h.newSchedule("b"), Version: 1}} {
			got, err := ex.ScheduleUpdate(h.ctx, miss)
			require.NoError(h.t, err, "ScheduleUpdate that matches nothing")
			require.Nil(h.t, got, "ScheduleUpdate that matches nothing")
		}
		got, err := ex.ScheduleUpdate(h.ctx, &driver.ScheduleUpdateParams{Schedule: &next, Version: 1})
		require.NoError(h.t, err, "ScheduleUpdate")
		next.CreatedAt, next.LastRunAt, next.LastJobID, next.Version = s.CreatedAt, s.LastRunAt, s.LastJobID, 2
		h.requireSchedule(&next, got)
	})
	h.requireScheduleStored(&next)
}

func testScheduleDelete[TTx any](h *harness[TTx], m mode) {
	s, keep := h.newSchedule("a"), h.newSchedule("a")
	keep.Kind = driver.SchedulePeriodic
	h.insertSchedule(h.exec(), s)
	h.insertSchedule(h.exec(), keep)
	s.Version, keep.Version = 1, 1
	h.via(m, func(ex driver.Executor) {
		got, err := ex.ScheduleDelete(h.ctx, &driver.ScheduleDeleteParams{Kind: s.Kind, Name: s.Name})
		require.NoError(h.t, err, "ScheduleDelete")
		h.requireSchedule(s, got)
		got, err = ex.ScheduleDelete(h.ctx, &driver.ScheduleDeleteParams{Kind: s.Kind, Name: s.Name})
		require.ErrorIs(h.t, err, driver.ErrScheduleNotFound, "second ScheduleDelete")
		require.Nil(h.t, got)
	})
	h.requireNoSchedule(s.Kind, s.Name)
	h.requireScheduleStored(keep)
}

// tickJob returns the job of schedule s's tick at tick.
func (h *harness[TTx]) tickJob(s *driver.ScheduleRow, tick time.Time) *driver.JobInsert {
	j := h.newJob()
	j.Topic, j.Payload, j.UniqueKey = s.Topic, s.Payload, "schedule:"+s.Name+":"+tick.Format(time.RFC3339)
	return j
}

// tick records a tick through ex and returns its result.
func (h *harness[TTx]) tick(ex driver.Executor, p *driver.ScheduleTickParams) *driver.ScheduleTickResult {
	h.t.Helper()
	res, err := ex.ScheduleTick(h.ctx, p)
	require.NoError(h.t, err, "ScheduleTick")
	require.NotNil(h.t, res, "ScheduleTick")
	return res
}

func testScheduleTick[TTx any](h *harness[TTx], m mode) {
	s := h.newSchedule("a")
	h.insertSchedule(h.exec(), s)
	s.Version = 1
	j := h.tickJob(s, h.base)
	stale := h.tickJob(s, h.base)
	h.via(m, func(ex driver.Executor) {
		res := h.tick(ex, &driver.ScheduleTickParams{Kind: s.Kind, Name: s.Name, Version: 1, Tick: h.base,
			NextRunAt: h.at(5 * time.Minute), Job: j})
		require.True(h.t, res.Matched, "tick at the version read")
		require.NotNil(h.t, res.Job, "tick's job")
		require.False(h.t, res.Job.Duplicate)
		requireRow(h.t, pendingRow(j), res.Job.Job)
		res = h.tick(ex, &driver.ScheduleTickParams{Kind: s.Kind, Name: s.Name, Version: 1, Tick: h.base,
			NextRunAt: h.at(5 * time.Minute), Job: stale})
		require.False(h.t, res.Matched, "a second tick at the same version")
		require.Nil(h.t, res.Job)
	})
	h.requireStored(pendingRow(j))
	h.requireNotFound(stale.ID)
	s.NextRunAt, s.LastRunAt, s.LastJobID, s.Version = h.at(5*time.Minute), h.base, j.ID, 2
	h.requireScheduleStored(s)

	// A skipped tick moves only the next run.
	h.via(m, func(ex driver.Executor) {
		res := h.tick(ex, &driver.ScheduleTickParams{Kind: s.Kind, Name: s.Name, Version: 2,
			Tick: h.at(5 * time.Minute), NextRunAt: h.at(10 * time.Minute)})
		require.True(h.t, res.Matched, "skipped tick")
		require.Nil(h.t, res.Job)
	})
	s.NextRunAt, s.Version = h.at(10*time.Minute), 3
	h.requireScheduleStored(s)

	// A live job holding the tick's unique key is the tick's job.
	held := h.tickJob(s, h.at(10*time.Minute))
	h.insert(held)
	dup := h.tickJob(s, h.at(10*time.Minute))
	h.via(m, func(ex driver.Executor) {
		res := h.tick(ex, &driver.ScheduleTickParams{Kind: s.Kind, Name: s.Name, Version: 3,
			Tick: h.at(10 * time.Minute), NextRunAt: h.at(15 * time.Minute), Job: dup})
		require.True(h.t, res.Matched, "tick whose key is held")
		require.True(h.t, res.Job.Duplicate, "tick whose key is held")
		require.Equal(h.t, held.ID, res.Job.Job.ID)
	})
	h.requireNotFound(dup.ID)
	s.NextRunAt, s.LastRunAt, s.LastJobID, s.Version = h.at(15*time.Minute), h.at(10*time.Minute), held.ID, 4
	h.requireScheduleStored(s)

	// A gone schedule matches nothing.
	gone := h.tickJob(h.newSchedule("gone"), h.base)
	res := h.tick(h.exec(), &driver.ScheduleTickParams{Kind: s.Kind, Name: "gone", Version: 1, Tick: h.base, Job: gone})
	require.False(h.t, res.Matched, "tick of a schedule that does not exist")
	h.requireNotFound(gone.ID)
}

func testScheduleTickRace[TTx any](h *harness[TTx], _ mode) {
	s := h.newSchedule("a")
	h.insertSchedule(h.exec(), s)
	const n = 8
	jobs := make([]*driver.JobInsert, n)
	results := make([]*driver.ScheduleTickResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		// Each with its own unique key, so that only the compare-and-set
		// keeps a second job out.
		jobs[i] = h.tickJob(s, h.at(time.Duration(i)*time.Second))
		wg.Go(func() {
			results[i], errs[i] = h.exec().ScheduleTick(h.ctx, &driver.ScheduleTickParams{Kind: s.Kind, Name: s.Name,
				Version: 1, Tick: h.base, NextRunAt: h.at(5 * time.Minute), Job: jobs[i]})
		})
	}
	wg.Wait()
	won := -1
	for i := range n {
		require.NoError(h.t, errs[i], "ScheduleTick %d", i)
		if results[i].Matched {
			require.Equal(h.t, -1, won, "ticks %d and %d both matched", won, i)
			won = i
			continue
		}
		h.requireNotFound(jobs[i].ID)
	}
	require.NotEqual(h.t, -1, won, "no tick matched")
	h.requireStored(pendingRow(jobs[won]))
	got, err := h.getSchedule(s.Kind, s.Name)
	require.NoError(h.t, err)
	require.Equal(h.t, jobs[won].ID, got.LastJobID)
	require.EqualValues(h.t, 2, got.Version)
}

func testScheduleRollback[TTx any](h *harness[TTx], _ mode) {
	s, kept := h.newSchedule("a"), h.newSchedule("kept")
	h.insertSchedule(h.exec(), kept)
	kept.Version = 1
	j := h.tickJob(kept, h.base)
	h.inTx(false, func(ex driver.Executor) {
		h.insertSchedule(ex, s)
		res := h.tick(ex, &driver.ScheduleTickParams{Kind: kept.Kind, Name: kept.Name, Version: 1, Tick: h.base,
			NextRunAt: h.at(time.Hour), Job: j})
		require.True(h.t, res.Matched)
		next := *kept
		next.Cron = "@daily"
		got, err := ex.ScheduleUpdate(h.ctx, &driver.ScheduleUpdateParams{Schedule: &next, Version: 2})
		require.NoError(h.t, err)
		require.NotNil(h.t, got)
	})
	h.requireNoSchedule(s.Kind, s.Name)
	h.requireNotFound(j.ID)
	h.requireScheduleStored(kept)
	h.inTx(false, func(ex driver.Executor) {
		_, err := ex.ScheduleDelete(h.ctx, &driver.ScheduleDeleteParams{Kind: kept.Kind, Name: kept.Name})
		require.NoError(h.t, err)
	})
	h.requireScheduleStored(kept)
}

func testScheduleCancelled[TTx any](h *harness[TTx], _ mode) {
	s := h.newSchedule("a")
	h.insertSchedule(h.exec(), s)
	s.Version = 1
	fresh, next := h.newSchedule("b"), *s
	next.Cron = "@daily"
	ctx := cancelled(h.ctx)
	ops := map[string]func(ex driver.Executor) error{
		"ScheduleInsert": func(ex driver.Executor) error {
			_, err := ex.ScheduleInsert(ctx, &driver.ScheduleInsertParams{Schedule: fresh})
			return err
		},
		"ScheduleGet": func(ex driver.Executor) error {
			_, err := ex.ScheduleGet(ctx, &driver.ScheduleGetParams{Kind: s.Kind, Name: s.Name})
			return err
		},
		"ScheduleList": func(ex driver.Executor) error {
			_, err := ex.ScheduleList(ctx, &driver.ScheduleListParams{})
			return err
		},
		"ScheduleUpdate": func(ex driver.Executor) error {
			_, err := ex.ScheduleUpdate(ctx, &driver.ScheduleUpdateParams{Schedule: &next, Version: 1})
			return err
		},
		"ScheduleDelete": func(ex driver.Executor) error {
			_, err := ex.ScheduleDelete(ctx, &driver.ScheduleDeleteParams{Kind: s.Kind, Name: s.Name})
			return err
		},
		"ScheduleTick": func(ex driver.Executor) error {
			_, err := ex.ScheduleTick(ctx, &driver.ScheduleTickParams{Kind: s.Kind, Name: s.Name, Version: 1,
				Tick: h.base, NextRunAt: h.at(time.Hour), Job: h.tickJob(s, h.base)})
			return err
		},
	}
	for name, op := range ops {
		require.ErrorIs(h.t, op(h.exec()), context.Canceled, name)
		h.abortTx(func(ex driver.Executor) { require.ErrorIs(h.t, op(ex), context.Canceled, name+" in a transaction") })
	}
	h.requireScheduleStored(s)
	h.requireNoSchedule(fresh.Kind, fresh.Name)
}
