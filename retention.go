package sluice

import (
	"time"
)

// Defaults of Retention, from the original design.
const (
	// DefaultKeepCompleted is how long completed jobs are kept.
	DefaultKeepCompleted = 24 * time.Hour
	// DefaultKeepFailed is how long failed and cancelled jobs are kept.
	DefaultKeepFailed = 7 * 24 * time.Hour
	// DefaultCleanInterval is how often a started client deletes expired
	// jobs.
	DefaultCleanInterval = time.Minute
)

// KeepForever, as a Retention field, keeps jobs of that status for good.
const KeepForever time.Duration = -1

// Retention is how long finished jobs are kept, counted from when they
// finished, before a started client deletes them. A zero field means its
// default; KeepForever keeps jobs of that status for good. Every started
// client cleans, and any number may run at once: each deletes different
// jobs, in small batches.
type Retention struct {
	// Completed is how long completed jobs are kept. Default 24 hours.
	Completed time.Duration
	// Failed is how long failed jobs (the dead letter) are kept. Default
	// 7 days.
	Failed time.Duration
	// Cancelled is how long cancelled jobs are kept. Default 7 days.
	Cancelled time.Duration
	// Interval is how often the client deletes expired jobs (at least
	// 1 ms). Default 1 minute.
	Interval time.Duration
}

// fill validates r and fills in its defaults.
func (r *Retention) fill() error {
	keeps := []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"Completed", &r.Completed, DefaultKeepCompleted},
		{"Failed", &r.Failed, DefaultKeepFailed},
		{"Cancelled", &r.Cancelled, DefaultKeepFailed},
	}
	for _, k := range keeps {
		if *k.v < 0 && *k.v != KeepForever {
			return &ConfigError{Field: "Retention." + k.name, Reason: "must not be negative, but for KeepForever"}
		}
		*k.v = orDefault(*k.v, k.def)
	}
	if r.Interval < 0 || r.Interval > 0 && r.Interval < time.Millisecond {
		return &ConfigError{Field: "Retention.Interval", Reason: "must be at least 1ms"}
	}
	r.Interval = orDefault(r.Interval, DefaultCleanInterval)
	return nil
}
