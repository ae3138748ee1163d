package sluice

import (
	"context"
	"fmt"
	"math"

	"github.com/sluicehq/sluice/driver"
)

// JobProgress is how far a job got, as its worker last reported it with
// ReportProgress and its client stored it: the attempt, the percent done,
// a message, and when it was reported. See JobRow.Progress.
type JobProgress = driver.JobProgress

// MaxProgressMessageBytes is the longest message ReportProgress accepts,
// in bytes.
const MaxProgressMessageBytes = 512

// ReportProgress records how far the job whose context ctx is has got:
// percent, from 0 to 100, and a short message (at most
// MaxProgressMessageBytes of UTF-8 without NUL characters; it may be
// empty). It costs an in-memory store and never waits for the database:
// the client writes the latest progress of each running job at most once
// per Config.ProgressInterval, in one write for all of them, and then
// sends an EventProgressed. A report replaced before it was written is
// never stored, and the last report of a run is lost if the job's outcome
// is recorded before the next write: the outcome does not wait for it.
// The stored progress is shown in JobRow.Progress by Get and List, and
// kept after the job ends.
//
// A percent that is NaN or out of range, or a message that is too long,
// not UTF-8 or holds a NUL character, returns an error matching
// ErrInvalidProgress and records nothing; a context that is not a job's
// returns ErrNotJobContext.
func ReportProgress(ctx context.Context, percent float64, message string) error {
	jr, _ := ctx.Value(jobRunKey{}).(*jobRun)
	if jr == nil {
		return fmt.Errorf("report progress: %w", ErrNotJobContext)
	}
	if err := checkProgress(percent, message); err != nil {
		return fmt.Errorf("report progress: %w", err)
	}
	at := jr.run.cfg.now() // the client's clock, which a test may control
	jr.progress.Store(&driver.JobProgress{Attempt: jr.row.Attempt, Percent: percent, Message: message, At: at})
	return nil
}

// checkProgress returns a *ProgressError for arguments ReportProgress does
// not accept.
func checkProgress(percent float64, message string) error {
	switch {
	case math.IsNaN(percent) || percent < 0 || percent > 100:
		return &ProgressError{Field: "percent", Reason: fmt.Sprintf("%v is not between 0 and 100", percent)}
	case len(message) > MaxProgressMessageBytes:
		return &ProgressError{Field: "message", Reason: fmt.Sprintf("%d bytes is more than %d", len(message), MaxProgressMessageBytes)}
	}
	if err := driver.CheckText(message); err != nil {
		return &ProgressError{Field: "message", Reason: err.Error()}
	}
	return nil
}
