package sluice

import (
	"encoding/json"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// Schedule is a stored schedule: a job that started clients enqueue at
// every tick of a cron expression, kept in the database beside the jobs so
// that it can be created, changed and deleted while the clients run. Its
// JSON form is what an HTTP API serves.
//
// Exactly one job is enqueued per tick, however many clients run (see
// docs/schedules.md).
type Schedule struct {
	// Name names the schedule; it is unique among stored schedules, at
	// most 200 bytes of valid UTF-8 without NUL characters.
	Name string `json:"name"`
	// Cron is when the schedule fires: five fields (minute hour
	// day-of-month month day-of-week), six with seconds first, or a
	// descriptor (@hourly, @daily, @weekly, @monthly, @yearly, @every 5m).
	Cron string `json:"cron"`
	// TimeZone is the IANA name of the zone Cron is read in, such as
	// "Europe/Paris". Empty means UTC.
	TimeZone string `json:"time_zone,omitempty"`
	// Topic is the topic of the jobs it enqueues.
	Topic string `json:"topic"`
	// Payload is the jobs' arguments as JSON, checked as an enqueue checks
	// them. Empty means {}.
	Payload json.RawMessage `json:"payload,omitempty"`
	// Queue is the queue the jobs go to; empty means QueueDefault. Only
	// clients whose Config.Queues name it run the schedule.
	Queue string `json:"queue,omitempty"`
	// Priority and MaxRetries are the jobs' options, as EnqueueOptions
	// has them.
	Priority   int `json:"priority"`
	MaxRetries int `json:"max_retries"`
	// Disabled pauses the schedule. When it is enabled again, it runs at
	// its next tick after that; the ticks while it was disabled are not
	// caught up.
	Disabled bool `json:"disabled"`
	// CatchUp says what happens to ticks missed while no client ran it:
	// CatchUpOnce (the default) or CatchUpSkip.
	CatchUp CatchUp `json:"catch_up,omitempty"`

	// LastRunAt is the tick of the last job the schedule enqueued, and
	// LastJobID that job's ID; zero and empty before its first.
	LastRunAt time.Time `json:"last_run_at,omitzero"`
	LastJobID string    `json:"last_job_id,omitempty"`
	// NextRunAt is its next tick; zero while it is disabled. A tick in the
	// past is due, and enqueued by the next client to look.
	NextRunAt time.Time `json:"next_run_at,omitzero"`
	// CreatedAt and UpdatedAt are when it was created and last changed by
	// CreateSchedule or UpdateSchedule.
	CreatedAt time.Time `json:"created_at,omitzero"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// CatchUp is what a schedule or periodic job does with ticks it missed
// while no client ran it (all were stopped, say): a tick is missed when a
// later tick is due too, or when it is more than a minute overdue.
type CatchUp string

// The catch-up policies. Neither ever enqueues a burst of missed ticks.
const (
	// CatchUpOnce enqueues one job, for the latest missed tick, at once.
	// It is the default.
	CatchUpOnce CatchUp = "once"
	// CatchUpSkip enqueues nothing for missed ticks; the schedule runs
	// again at its next tick.
	CatchUpSkip CatchUp = "skip"
)

// missedAfter is how overdue a tick may be when a client comes to it
// before it counts as missed, although no later tick is due yet.
const missedAfter = time.Minute

// maxScheduleName is the longest schedule or periodic job name accepted,
// in bytes: with a tick's time it makes its jobs' unique key.
const maxScheduleName = 200

// scheduleFromRow returns the public form of a stored row.
func scheduleFromRow(r *driver.ScheduleRow) *Schedule {
	return &Schedule{
		Name: r.Name, Cron: r.Cron, TimeZone: r.TimeZone, Topic: r.Topic, Payload: r.Payload,
		Queue: r.Queue, Priority: r.Priority, MaxRetries: r.MaxRetries, Disabled: r.Disabled,
		CatchUp: CatchUp(r.CatchUp), LastRunAt: r.LastRunAt, LastJobID: r.LastJobID, NextRunAt: r.NextRunAt,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}
