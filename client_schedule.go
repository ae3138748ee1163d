package sluice

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// updateTries bounds how often UpdateSchedule reads a schedule again when
// a tick recorded meanwhile moved it on.
const updateTries = 10

// CreateSchedule stores a new schedule, which started clients run from its
// first tick after now. It returns the schedule as stored, with NextRunAt.
// A schedule that cannot be stored (an invalid cron expression, an unknown
// time zone, a topic, payload or options an enqueue would refuse, an
// unknown queue) is a *ScheduleError, and a name another stored schedule
// has is ErrDuplicateSchedule; nothing is written then.
func (c *Client[TTx]) CreateSchedule(ctx context.Context, s *Schedule) (*Schedule, error) {
	return c.createSchedule(ctx, c.exec, s)
}

// CreateScheduleTx is CreateSchedule inside tx: the schedule exists, and
// runs, only if tx commits.
func (c *Client[TTx]) CreateScheduleTx(ctx context.Context, tx TTx, s *Schedule) (*Schedule, error) {
	if isNil(tx) {
		return nil, fmt.Errorf("create schedule: %w", ErrNilTx)
	}
	return c.createSchedule(ctx, c.driver.UnwrapExecutor(tx), s)
}

// UpdateSchedule replaces the definition of the stored schedule s.Name with
// s (every field but the computed ones) and returns it as stored. A
// schedule whose Cron or TimeZone changed, or that is enabled again, runs
// from its first tick after now; otherwise its next tick stays. It returns
// ErrScheduleNotFound for an unknown name, and the errors of
// CreateSchedule for a schedule that cannot be stored; nothing is written
// then.
func (c *Client[TTx]) UpdateSchedule(ctx context.Context, s *Schedule) (*Schedule, error) {
	return c.updateSchedule(ctx, c.exec, s)
}

// UpdateScheduleTx is UpdateSchedule inside tx: the change takes effect
// only if tx commits.
func (c *Client[TTx]) UpdateScheduleTx(ctx context.Context, tx TTx, s *Schedule) (*Schedule, error) {
	if isNil(tx) {
		return nil, fmt.Errorf("update schedule: %w", ErrNilTx)
	}
	return c.updateSchedule(ctx, c.driver.UnwrapExecutor(tx), s)
}

// DeleteSchedule deletes the stored schedule name and returns it as it
// was, or returns ErrScheduleNotFound. Jobs it enqueued are left alone.
func (c *Client[TTx]) DeleteSchedule(ctx context.Context, name string) (*Schedule, error) {
	return c.deleteSchedule(ctx, c.exec, name)
}

// DeleteScheduleTx is DeleteSchedule inside tx: the schedule is gone only
// if tx commits.
func (c *Client[TTx]) DeleteScheduleTx(ctx context.Context, tx TTx, name string) (*Schedule, error) {
	if isNil(tx) {
		return nil, fmt.Errorf("delete schedule %q: %w", name, ErrNilTx)
	}
	return c.deleteSchedule(ctx, c.driver.UnwrapExecutor(tx), name)
}

// GetSchedule returns the stored schedule name, or ErrScheduleNotFound.
func (c *Client[TTx]) GetSchedule(ctx context.Context, name string) (*Schedule, error) {
	row, err := c.exec.ScheduleGet(ctx, &driver.ScheduleGetParams{Kind: driver.ScheduleStored, Name: name})
	if err != nil {
		return nil, fmt.Errorf("get schedule %q: %w", name, err)
	}
	return scheduleFromRow(row), nil
}

// ListSchedules returns the stored schedules, sorted by name. (Periodic
// jobs, declared in Config, are not stored schedules.)
func (c *Client[TTx]) ListSchedules(ctx context.Context) ([]*Schedule, error) {
	rows, err := c.exec.ScheduleList(ctx, &driver.ScheduleListParams{Kind: driver.ScheduleStored})
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	out := make([]*Schedule, len(rows))
	for i, r := range rows {
		out[i] = scheduleFromRow(r)
	}
	return out, nil
}

func (c *Client[TTx]) createSchedule(ctx context.Context, exec driver.Executor, s *Schedule) (*Schedule, error) {
	now := c.now()
	row, spec, err := c.scheduleRow(s, now)
	if err != nil {
		return nil, fmt.Errorf("create schedule: %w", err)
	}
	row.CreatedAt = now
	if !row.Disabled {
		row.NextRunAt = spec.next(now)
	}
	stored, err := exec.ScheduleInsert(ctx, &driver.ScheduleInsertParams{Schedule: row})
	if err != nil {
		return nil, fmt.Errorf("create schedule %q: %w", s.Name, err)
	}
	c.wakeScheduler()
	return scheduleFromRow(stored), nil
}

func (c *Client[TTx]) updateSchedule(ctx context.Context, exec driver.Executor, s *Schedule) (*Schedule, error) {
	now := c.now()
	row, spec, err := c.scheduleRow(s, now)
	if err != nil {
		return nil, fmt.Errorf("update schedule: %w", err)
	}
	for range updateTries {
		cur, err := exec.ScheduleGet(ctx, &driver.ScheduleGetParams{Kind: driver.ScheduleStored, Name: s.Name})
		if err != nil {
			return nil, fmt.Errorf("update schedule %q: %w", s.Name, err)
		}
		switch {
		case row.Disabled:
			row.NextRunAt = time.Time{}
		case cur.Disabled || cur.NextRunAt.IsZero() || cur.Cron != row.Cron || cur.TimeZone != row.TimeZone:
			row.NextRunAt = spec.next(now)
		default:
			row.NextRunAt = cur.NextRunAt
		}
		stored, err := exec.ScheduleUpdate(ctx, &driver.ScheduleUpdateParams{Schedule: row, Version: cur.Version})
		if err != nil {
			return nil, fmt.Errorf("update schedule %q: %w", s.Name, err)
		}
		if stored != nil {
			c.wakeScheduler()
			return scheduleFromRow(stored), nil
		}
	}
	return nil, fmt.Errorf("update schedule %q: it kept changing under %d tries", s.Name, updateTries)
}

func (c *Client[TTx]) deleteSchedule(ctx context.Context, exec driver.Executor, name string) (*Schedule, error) {
	row, err := exec.ScheduleDelete(ctx, &driver.ScheduleDeleteParams{Kind: driver.ScheduleStored, Name: name})
	if err != nil {
		return nil, fmt.Errorf("delete schedule %q: %w", name, err)
	}
	return scheduleFromRow(row), nil
}

// scheduleRow checks s and returns the row that stores it, updated at
// now, with its parsed cron expression. Its payload is checked, and
// normalized, by the enqueue its ticks make.
func (c *Client[TTx]) scheduleRow(s *Schedule, now time.Time) (*driver.ScheduleRow, *cronSpec, error) {
	if s == nil {
		return nil, nil, &ScheduleError{Field: "Schedule", Reason: "must not be nil"}
	}
	invalid := func(field string, err error) (*driver.ScheduleRow, *cronSpec, error) {
		return nil, nil, &ScheduleError{Name: s.Name, Field: field, Reason: err.Error(), Err: err}
	}
	if err := checkScheduleName(s.Name); err != nil {
		return invalid("Name", err)
	}
	spec, err := parseCron(s.Cron, s.TimeZone)
	if se := (*ScheduleError)(nil); errors.As(err, &se) {
		se.Name = s.Name
		return nil, nil, se
	}
	catchUp, err := checkCatchUp(s.CatchUp)
	if err != nil {
		return invalid("CatchUp", err)
	}
	switch {
	case s.Topic == "":
		return invalid("Topic", ErrEmptyTopic)
	case driver.CheckText(s.Topic) != nil:
		return invalid("Topic", &ArgsError{Topic: s.Topic, Err: fmt.Errorf("topic %w", driver.CheckText(s.Topic))})
	}
	opts := &EnqueueOptions{Queue: s.Queue, Priority: s.Priority, MaxRetries: s.MaxRetries}
	ins, err := c.newInsert(storedArgs{topic: s.Topic, payload: s.Payload}, opts, now)
	if err != nil {
		return invalid(insertField(err), err)
	}
	return &driver.ScheduleRow{
		Kind: driver.ScheduleStored, Name: s.Name, Cron: s.Cron, TimeZone: s.TimeZone, Topic: s.Topic,
		Payload: ins.Payload, Queue: ins.Queue, Priority: s.Priority, MaxRetries: s.MaxRetries,
		Disabled: s.Disabled, CatchUp: string(catchUp), UpdatedAt: now,
	}, spec, nil
}

// insertField names the Schedule field an enqueue error is about: the
// topic was checked before, so arguments that do not encode are its
// payload.
func insertField(err error) string {
	var oe *OptionsError
	switch {
	case errors.As(err, &oe):
		return oe.Field
	case errors.Is(err, ErrUnknownQueue):
		return "Queue"
	}
	return "Payload"
}

// wakeScheduler asks the scheduler of the running client, if any, to read
// the schedules again at once.
func (c *Client[TTx]) wakeScheduler() {
	if r := c.run.Load(); r != nil && r.sched != nil {
		r.sched.wake()
	}
}
