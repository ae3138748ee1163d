package sluice

import (
	"context"
	"errors"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// scheduler is the loop of a started client that enqueues the jobs of
// stored schedules and of its periodic jobs at their ticks. It reads the
// schedules due before its next look, once a poll interval or when this
// client changed one, and sleeps until the earliest tick among them. Each
// tick is recorded by a compare-and-set on the schedule's version in the
// transaction that inserts its job (driver.ScheduleExecutor.ScheduleTick),
// so that of the clients that tick at once exactly one enqueues.
type scheduler struct {
	exec driver.Executor
	cfg  *Config
	// periodic are the client's periodic jobs, by name.
	periodic map[string]*periodicJob
	// forced are the periodic jobs whose RunOnStart is still to be
	// honoured by the first look after they were recorded.
	forced map[string]bool
	// newInsert checks and builds a job as Enqueue does.
	newInsert func(args JobArgs, opts *EnqueueOptions, now time.Time) (*driver.JobInsert, error)
	// owner is the run the scheduler belongs to.
	owner *run
	wakeC chan struct{}
	// specs caches the parsed cron expressions of stored schedules, by
	// expression and zone; a nil spec is one that does not parse here.
	specs map[[2]string]*cronSpec
}

// newScheduler returns the scheduler of run r.
func (c *Client[TTx]) newScheduler(r *run) *scheduler {
	s := &scheduler{
		exec: c.exec, cfg: c.cfg, owner: r, newInsert: c.newInsert,
		periodic: make(map[string]*periodicJob), forced: make(map[string]bool),
		wakeC: make(chan struct{}, 1), specs: make(map[[2]string]*cronSpec),
	}
	for _, pj := range c.periodic {
		s.periodic[pj.Name] = pj
	}
	return s
}

// wake makes the loop look at the schedules at once.
func (s *scheduler) wake() {
	select {
	case s.wakeC <- struct{}{}:
	default:
	}
}

// run looks at the schedules until ctx ends.
func (s *scheduler) run(ctx context.Context) {
	synced := len(s.periodic) == 0
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-s.wakeC:
		}
		if !synced {
			synced = s.syncPeriodic(ctx)
		}
		wait := s.look(ctx)
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
	}
}

// look ticks every schedule that is due and returns how long to wait
// before looking again: until the next tick, or a poll interval at most.
func (s *scheduler) look(ctx context.Context) time.Duration {
	interval := s.cfg.PollInterval
	now := s.cfg.now()
	horizon := now.Add(interval)
	rows, err := s.exec.ScheduleList(ctx, &driver.ScheduleListParams{DueBy: horizon})
	if err != nil {
		if ctx.Err() == nil {
			s.cfg.Logger.Warn("sluice: reading the schedules failed", "error", err)
		}
		return interval
	}
	next := horizon
	for _, row := range rows {
		src := s.source(row)
		if src == nil {
			continue
		}
		if row.NextRunAt.After(now) {
			next = minTime(next, row.NextRunAt)
			continue
		}
		at, err := s.tick(ctx, row, src, now)
		switch {
		case errors.Is(err, errTickLost):
			next = now // someone else recorded it: read it again at once
		case err != nil:
			if ctx.Err() == nil {
				s.cfg.Logger.Warn("sluice: enqueueing a scheduled job failed", "kind", row.Kind, "schedule", row.Name,
					"error", err)
			}
		default:
			next = minTime(next, at)
		}
	}
	clear(s.forced)
	return max(next.Sub(s.cfg.now()), 0)
}

// tickSource is what a tick enqueues: arguments, options, the schedule's
// parsed cron expression and catch-up policy.
type tickSource struct {
	spec    *cronSpec
	args    JobArgs
	opts    *EnqueueOptions
	catchUp CatchUp
	force   bool
}

// source returns what a tick of row enqueues, or nil when this client
// does not run row: a periodic job it does not have, a stored schedule of
// a queue it does not know, or whose cron expression does not parse here.
func (s *scheduler) source(row *driver.ScheduleRow) *tickSource {
	if row.Kind == driver.SchedulePeriodic {
		pj := s.periodic[row.Name]
		if pj == nil {
			return nil
		}
		return &tickSource{spec: pj.spec, args: pj.Args, opts: pj.Options, catchUp: pj.CatchUp, force: s.forced[row.Name]}
	}
	if _, ok := s.cfg.Queues[row.Queue]; !ok {
		return nil
	}
	key := [2]string{row.Cron, row.TimeZone}
	spec, seen := s.specs[key]
	if !seen {
		var err error
		if spec, err = parseCron(row.Cron, row.TimeZone); err != nil {
			s.cfg.Logger.Error("sluice: a stored schedule cannot run here", "schedule", row.Name, "error", err)
		}
		s.specs[key] = spec
	}
	if spec == nil {
		return nil
	}
	return &tickSource{
		spec: spec, args: storedArgs{topic: row.Topic, payload: row.Payload},
		opts:    &EnqueueOptions{Queue: row.Queue, Priority: row.Priority, MaxRetries: row.MaxRetries},
		catchUp: CatchUp(row.CatchUp),
	}
}

// errTickLost is returned by tick when another client recorded the tick
// first, or the schedule changed since it was read.
var errTickLost = errors.New("tick recorded by another client")

// tick records the due tick of row and, unless it was missed and the
// policy skips it, enqueues its job. Of several due ticks only the latest
// is considered. It returns the schedule's next tick.
func (s *scheduler) tick(ctx context.Context, row *driver.ScheduleRow, src *tickSource, now time.Time) (time.Time, error) {
	latest := src.spec.latest(row.NextRunAt, now)
	missed := latest.After(row.NextRunAt) || now.Sub(latest) > missedAfter
	p := &driver.ScheduleTickParams{Kind: row.Kind, Name: row.Name, Version: row.Version, Tick: latest,
		NextRunAt: src.spec.next(latest)}
	if !missed || src.catchUp == CatchUpOnce || src.force {
		ins, err := s.newInsert(src.args, src.opts, now)
		if err != nil {
			return time.Time{}, err
		}
		ins.UniqueKey = tickKey(row.Kind, row.Name, latest)
		p.Job = ins
	}
	inserts := []*driver.JobInsert{p.Job}
	held := p.Job != nil && s.owner.events.holdEnqueued(inserts)
	res, err := s.exec.ScheduleTick(ctx, p)
	var results []driver.JobInsertResult
	if err == nil && res.Job != nil {
		results = []driver.JobInsertResult{*res.Job}
	}
	if held {
		s.owner.events.releaseEnqueued(inserts, results, s.cfg.now())
	}
	switch {
	case err != nil:
		return time.Time{}, err
	case !res.Matched:
		return time.Time{}, errTickLost
	}
	if len(results) == 1 && !results[0].Duplicate && s.owner.stopListen == nil {
		s.owner.wake(p.Job.Queue, true)
	}
	return p.NextRunAt, nil
}

// minTime returns the earlier of a and b.
func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// syncPeriodic records the client's periodic jobs in the schedules table
// (see syncOne). It reports whether all were recorded; the loop tries
// again before its next look otherwise.
func (s *scheduler) syncPeriodic(ctx context.Context) bool {
	ok := true
	for _, pj := range s.periodic {
		if err := s.syncOne(ctx, pj); err != nil {
			ok = false
			if ctx.Err() == nil {
				s.cfg.Logger.Warn("sluice: recording a periodic job failed", "name", pj.Name, "error", err)
			}
		}
	}
	return ok
}

// syncOne records periodic job pj: a new one runs from its first tick
// after now (or now, with RunOnStart); one recorded with another Cron or
// TimeZone is given this client's, and runs from its first tick after now.
// A recorded one keeps its next tick otherwise.
func (s *scheduler) syncOne(ctx context.Context, pj *periodicJob) error {
	now := s.cfg.now()
	ins, err := s.newInsert(pj.Args, pj.Options, now)
	if err != nil {
		return err
	}
	want := &driver.ScheduleRow{
		Kind: driver.SchedulePeriodic, Name: pj.Name, Cron: pj.Cron, TimeZone: pj.TimeZone, Topic: ins.Topic,
		Payload: ins.Payload, Queue: ins.Queue, Priority: ins.Priority, MaxRetries: ins.MaxRetries,
		CatchUp: string(pj.CatchUp), CreatedAt: now, UpdatedAt: now,
	}
	key := &driver.ScheduleGetParams{Kind: driver.SchedulePeriodic, Name: pj.Name}
	for range updateTries {
		cur, err := s.exec.ScheduleGet(ctx, key)
		if errors.Is(err, driver.ErrScheduleNotFound) {
			want.NextRunAt = pj.spec.next(now)
			if pj.RunOnStart {
				want.NextRunAt = now.Truncate(time.Second)
			}
			_, err = s.exec.ScheduleInsert(ctx, &driver.ScheduleInsertParams{Schedule: want})
			if errors.Is(err, driver.ErrDuplicateSchedule) {
				continue // another client recorded it first
			}
			return err
		}
		if err != nil {
			return err
		}
		s.forced[pj.Name] = pj.RunOnStart
		if cur.Cron == want.Cron && cur.TimeZone == want.TimeZone && cur.CatchUp == want.CatchUp &&
			cur.Topic == want.Topic && cur.Queue == want.Queue && !cur.NextRunAt.IsZero() {
			return nil
		}
		want.NextRunAt = cur.NextRunAt
		if cur.Cron != want.Cron || cur.TimeZone != want.TimeZone || cur.NextRunAt.IsZero() {
			want.NextRunAt = pj.spec.next(now)
		}
		updated, err := s.exec.ScheduleUpdate(ctx, &driver.ScheduleUpdateParams{Schedule: want, Version: cur.Version})
		if err != nil || updated != nil {
			return err
		}
	}
	return errors.New("it kept changing")
}
