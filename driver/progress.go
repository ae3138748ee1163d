package driver

import "time"

// JobProgress is how far a job got, as its worker last reported it while it
// ran. It is kept after the attempt ends; Attempt tells which attempt it
// belongs to.
type JobProgress struct {
	// Attempt is the attempt that reported it.
	Attempt int `json:"attempt"`
	// Percent is how much of the work was done, from 0 to 100.
	Percent float64 `json:"percent"`
	// Message says in a few words what the job was doing.
	Message string `json:"message,omitempty"`
	// At is when the worker reported it.
	At time.Time `json:"at"`
}

// JobProgressParams are the params of [Executor.JobProgress].
type JobProgressParams struct {
	// Jobs are the progress updates, at most one per job.
	Jobs []*JobProgressUpdate
}

// JobProgressUpdate sets the progress of one claim, its logs, or both.
type JobProgressUpdate struct {
	// ID, Attempt and LockedBy name the claim; the job changes only if it
	// is still processing under this claim.
	ID       string
	Attempt  int
	LockedBy string
	// Progress becomes the job's Progress, unless KeepProgress. Its
	// Attempt is ignored: the claim's Attempt is stored.
	Progress JobProgress
	// KeepProgress, when true, leaves the job's Progress as it is: the
	// update sets its Logs only.
	KeepProgress bool
	// Logs, when not nil, become the job's logs (the whole of them), and
	// their count of records logged its JobState.Logged.
	Logs *JobLogs
}
