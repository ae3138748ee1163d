package driver

import (
	"encoding/json"
	"log/slog"
	"time"
)

// LogRecord is one record a worker logged while it ran a job, as the
// job keeps it (see [JobRow.Logs]).
type LogRecord struct {
	// Attempt is the attempt that logged it.
	Attempt int `json:"attempt"`
	// Level is the record's level.
	Level slog.Level `json:"level"`
	// Time is when it was logged, by the client's clock.
	Time time.Time `json:"time"`
	// Message is the record's message.
	Message string `json:"msg"`
	// Attrs are the record's attributes as a JSON object, groups nested;
	// nil when it has none.
	Attrs json.RawMessage `json:"attrs,omitempty"`
}

// JobLogs are the records a job keeps: the newest ones, within the
// client's bounds, and how many older ones were dropped to stay within
// them.
type JobLogs struct {
	// Records are the kept records, oldest first.
	Records []LogRecord `json:"records"`
	// Dropped counts the records dropped, oldest first, over the job's
	// life.
	Dropped int `json:"dropped,omitempty"`
}

// Logged returns how many records were logged: those kept and those
// dropped. Drivers store it with the logs, for JobState.Logged.
func (l *JobLogs) Logged() int { return len(l.Records) + l.Dropped }

// MaxTags is the most tags a job may carry, and MaxTagBytes the longest
// tag; MaxMetadataBytes is the largest metadata, as encoded JSON. The
// client refuses more; drivers may rely on it.
const (
	MaxTags          = 32
	MaxTagBytes      = 128
	MaxMetadataBytes = 64 << 10
)
