package sluice

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// cronParser reads the expressions schedules and periodic jobs accept:
// five fields (minute hour day-of-month month day-of-week), six with
// seconds first, or a descriptor (@yearly, @monthly, @weekly, @daily,
// @hourly, @every 5m).
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom |
	cron.Month | cron.Dow | cron.Descriptor)

// cronSpec is a parsed cron expression in its time zone.
type cronSpec struct {
	sched cron.Schedule
	loc   *time.Location
}

// parseCron parses expr in the time zone named zone ("" is UTC). It
// returns a *ScheduleError naming "Cron" or "TimeZone" when either is
// invalid, or when expr never fires.
func parseCron(expr, zone string) (*cronSpec, error) {
	loc, err := loadZone(zone)
	if err != nil {
		return nil, &ScheduleError{Field: "TimeZone", Reason: err.Error()}
	}
	trimmed := strings.TrimSpace(expr)
	if strings.HasPrefix(trimmed, "TZ=") || strings.HasPrefix(trimmed, "CRON_TZ=") {
		return nil, &ScheduleError{Field: "Cron", Reason: "a time zone prefix is not accepted: set TimeZone"}
	}
	sched, err := parseSpec(trimmed)
	if err != nil {
		return nil, &ScheduleError{Field: "Cron", Reason: fmt.Sprintf("%q: %v", expr, err)}
	}
	s := &cronSpec{sched: sched, loc: loc}
	if s.next(time.Now()).IsZero() {
		return nil, &ScheduleError{Field: "Cron", Reason: fmt.Sprintf("%q never fires", expr)}
	}
	return s, nil
}

// parseSpec parses a cron expression, turning a panic of the parser into
// an error.
func parseSpec(expr string) (sched cron.Schedule, err error) {
	defer func() {
		if p := recover(); p != nil {
			sched, err = nil, fmt.Errorf("cannot parse: %v", p)
		}
	}()
	if expr == "" {
		return nil, errors.New("empty")
	}
	return cronParser.Parse(expr)
}

// loadZone returns the location named zone; "" and "UTC" are UTC.
func loadZone(zone string) (*time.Location, error) {
	if zone == "" || zone == "UTC" {
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q", zone)
	}
	return loc, nil
}

// next returns the first tick after t, in UTC at the microsecond drivers
// store, or the zero time if there is none within five years.
func (s *cronSpec) next(t time.Time) time.Time {
	n := s.sched.Next(t.In(s.loc))
	if n.IsZero() {
		return n
	}
	return n.UTC().Truncate(time.Microsecond)
}

// lookBack are the spans latest searches back from now for a tick, before
// it walks forward from first.
var lookBack = []time.Duration{time.Minute, time.Hour, 25 * time.Hour, 32 * 24 * time.Hour, 367 * 24 * time.Hour}

// latest returns the last tick at or before now of the ticks that follow
// one another from first, itself a tick at or before now. It costs a few
// steps however long ago first was: an @every schedule is counted in
// whole delays from first, and a cron expression is searched for from a
// little before now.
func (s *cronSpec) latest(first, now time.Time) time.Time {
	if cd, ok := s.sched.(cron.ConstantDelaySchedule); ok {
		return first.Add(now.Sub(first) / cd.Delay * cd.Delay)
	}
	from := first
	for _, back := range lookBack {
		start := now.Add(-back)
		if !start.After(from) {
			break
		}
		if t := s.next(start); !t.IsZero() && !t.After(now) {
			from = t
			break
		}
	}
	for {
		t := s.next(from)
		if t.IsZero() || t.After(now) {
			return from
		}
		from = t
	}
}
