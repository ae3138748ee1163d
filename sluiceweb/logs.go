package sluiceweb

import (
	"encoding/json"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice"
)

// logRecordJSON is a record a job's worker logged (sluice.LogRecord), as
// answers and events show it.
type logRecordJSON struct {
	// Level is slog's name of the level: DEBUG, INFO, WARN, ERROR, or one
	// of them with an offset, such as INFO+2.
	Level   slog.Level      `json:"level"`
	Time    time.Time       `json:"time"`
	Message string          `json:"message"`
	Attrs   json.RawMessage `json:"attrs"`
}

// jobLogJSON is one of a job's records, with the attempt that logged it.
type jobLogJSON struct {
	Attempt int `json:"attempt"`
	logRecordJSON
}

// logEvent is the data of an event named EventLog.
type logEvent struct {
	JobID   string        `json:"job_id"`
	Attempt int           `json:"attempt"`
	Record  logRecordJSON `json:"record"`
}

// newLogRecord returns r as answers show it: attributes an object, empty
// when there are none.
func newLogRecord(r *sluice.LogRecord) logRecordJSON {
	attrs := r.Attrs
	if len(attrs) == 0 {
		attrs = json.RawMessage("{}")
	}
	return logRecordJSON{Level: r.Level, Time: r.Time, Message: r.Message, Attrs: attrs}
}

// jobLogs returns a job's records as GET api/jobs/{id} answers them.
func jobLogs(job *sluice.JobRow) []jobLogJSON {
	out := make([]jobLogJSON, len(job.Logs))
	for i := range job.Logs {
		out[i] = jobLogJSON{Attempt: job.Logs[i].Attempt, logRecordJSON: newLogRecord(&job.Logs[i])}
	}
	return out
}
