package sluice

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// PeriodicJob is a job declared in code that every started client enqueues
// at each tick of a cron expression. Any number of processes may run the
// same Config: exactly one job is enqueued per tick, because the tick is
// recorded in the database under the job's Name, in the transaction that
// enqueues its job (see docs/schedules.md). Give every process the same
// periodic jobs; a process whose periodic job has another Cron under the
// same Name moves the job's next tick to its own.
type PeriodicJob struct {
	// Name identifies the job across processes and restarts: its ticks are
	// recorded under it. Default Args.Topic(); two periodic jobs of one
	// topic need names of their own. Renaming a job starts it afresh, as
	// a new job.
	Name string
	// Cron is when the job fires: five fields (minute hour day-of-month
	// month day-of-week), six with seconds first, or a descriptor
	// (@hourly, @daily, @weekly, @monthly, @yearly, @every 5m).
	Cron string
	// TimeZone is the IANA name of the zone Cron is read in, such as
	// "America/New_York". Empty means UTC.
	TimeZone string
	// Args are the job's arguments, encoded anew at each tick.
	Args JobArgs
	// Options are the job's options. RunAt and UniqueKey must be zero:
	// each tick sets them.
	Options *EnqueueOptions
	// RunOnStart enqueues the job as soon as a client starts if no job
	// was enqueued for its most recent tick, whatever CatchUp says; a new
	// job runs at once. It never enqueues a tick twice, so restarting
	// many processes runs the job once.
	RunOnStart bool
	// CatchUp is what happens to ticks missed while no client ran: the
	// default CatchUpOnce enqueues one job for the latest; CatchUpSkip
	// none.
	CatchUp CatchUp
}

// periodicJob is a checked PeriodicJob.
type periodicJob struct {
	PeriodicJob
	spec *cronSpec
}

// checkPeriodicJobs checks Config.PeriodicJobs, returning a *ConfigError
// naming the first bad field.
func (c *Client[TTx]) checkPeriodicJobs() ([]*periodicJob, error) {
	out := make([]*periodicJob, 0, len(c.cfg.PeriodicJobs))
	names := make(map[string]bool)
	for i, pj := range c.cfg.PeriodicJobs {
		field := fmt.Sprintf("PeriodicJobs[%d].", i)
		if pj.Args == nil {
			return nil, &ConfigError{Field: field + "Args", Reason: "must not be nil"}
		}
		if pj.Name == "" {
			pj.Name = pj.Args.Topic()
		}
		if err := checkScheduleName(pj.Name); err != nil {
			return nil, &ConfigError{Field: field + "Name", Reason: err.Error()}
		}
		if names[pj.Name] {
			return nil, &ConfigError{Field: field + "Name",
				Reason: fmt.Sprintf("another periodic job is named %q: give each a Name of its own", pj.Name)}
		}
		names[pj.Name] = true
		spec, err := parseCron(pj.Cron, pj.TimeZone)
		if se := (*ScheduleError)(nil); errors.As(err, &se) {
			return nil, &ConfigError{Field: field + se.Field, Reason: se.Reason}
		}
		if pj.CatchUp, err = checkCatchUp(pj.CatchUp); err != nil {
			return nil, &ConfigError{Field: field + "CatchUp", Reason: err.Error()}
		}
		if opts := pj.Options; opts != nil && (!opts.RunAt.IsZero() || opts.UniqueKey != "") {
			return nil, &ConfigError{Field: field + "Options", Reason: "RunAt and UniqueKey must be zero: each tick sets them"}
		}
		if _, err := c.newInsert(pj.Args, pj.Options, c.now()); err != nil {
			return nil, &ConfigError{Field: field + "Args", Reason: err.Error()}
		}
		out = append(out, &periodicJob{PeriodicJob: pj, spec: spec})
	}
	return out, nil
}

// checkScheduleName returns why name cannot name a schedule, or nil.
func checkScheduleName(name string) error {
	switch {
	case name == "":
		return errors.New("must not be empty")
	case len(name) > maxScheduleName:
		return fmt.Errorf("longer than %d bytes", maxScheduleName)
	}
	if err := driver.CheckText(name); err != nil {
		return err
	}
	return nil
}

// checkCatchUp returns the policy p names, the default for "", or an error.
func checkCatchUp(p CatchUp) (CatchUp, error) {
	switch p {
	case "":
		return CatchUpOnce, nil
	case CatchUpOnce, CatchUpSkip:
		return p, nil
	}
	return "", fmt.Errorf("%q is neither %q nor %q", p, CatchUpOnce, CatchUpSkip)
}

// storedArgs are job arguments given as a topic and its JSON payload, as a
// stored schedule keeps them. Unlike RawArgs, they are not checked against
// this client's workers: a schedule may enqueue jobs that other processes
// work.
type storedArgs struct {
	topic   string
	payload json.RawMessage
}

// Topic implements JobArgs.
func (a storedArgs) Topic() string { return a.topic }

// MarshalJSON returns the payload; an empty one is {}.
func (a storedArgs) MarshalJSON() ([]byte, error) {
	if len(a.payload) == 0 {
		return []byte("{}"), nil
	}
	return a.payload, nil
}

// tickKey is the unique key of the job of a schedule's tick.
func tickKey(kind driver.ScheduleKind, name string, tick time.Time) string {
	prefix := "schedule:"
	if kind == driver.SchedulePeriodic {
		prefix = "periodic:"
	}
	return prefix + name + ":" + tick.UTC().Format(time.RFC3339)
}
