package driver

import "time"

// AttemptRecord is one attempt of a job, as [JobRow.History] tells it.
type AttemptRecord struct {
	// Attempt is the attempt's number, counting from 1.
	Attempt int
	// StartedAt is when the attempt was claimed, and ClientID the client
	// that ran it; unset if they were not recorded.
	StartedAt time.Time
	ClientID  string
	// EndedAt is when the attempt ended; zero while it runs.
	EndedAt time.Time
	// Error and Trace are the attempt's error and, for a panic, its stack;
	// empty for an attempt that did not fail.
	Error string
	Trace string
}

// History returns the attempts of the job that it records, oldest first:
// each entry of Errors (failed attempts, and attempts whose client
// vanished, recorded as "lease expired"), then the latest attempt if it is
// running (EndedAt zero) or completed the job. Entries that record no run
// (a requeue) are left out, and so are attempts that ended without an
// error and without finishing the job: a snooze, a hand-back at a client's
// Stop, or an operator's cancel of the running job. Their numbers are the
// gaps. Errors keeps at most MaxErrorsKept entries, so a job failing for a
// long time shows its latest attempts only.
func (j *JobRow) History() []AttemptRecord {
	out := make([]AttemptRecord, 0, len(j.Errors)+1)
	for _, e := range j.Errors {
		if e.Error == RequeuedError && e.StartedAt.IsZero() && e.ClientID == "" {
			continue
		}
		out = append(out, AttemptRecord{Attempt: e.Attempt, StartedAt: e.StartedAt, ClientID: e.ClientID,
			EndedAt: e.At, Error: e.Error, Trace: e.Trace})
	}
	if j.Attempt == 0 || len(out) > 0 && out[len(out)-1].Attempt == j.Attempt {
		return out
	}
	latest := AttemptRecord{Attempt: j.Attempt, StartedAt: j.AttemptedAt, ClientID: j.AttemptedBy}
	switch j.Status {
	case StatusProcessing:
		// LockedBy names the holder even if the claim did not set
		// AttemptedBy (a client of a version that did not).
		latest.ClientID = j.LockedBy
		return append(out, latest)
	case StatusCompleted:
		latest.EndedAt = j.FinalizedAt
		return append(out, latest)
	}
	return out
}
