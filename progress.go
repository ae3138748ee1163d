package sluice

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/driver"
)

// JobProgress is how far a job got, as its worker last reported it with
// ReportProgress and its client stored it: the attempt, the percent done,
// a message, and when it was reported. See JobRow.Progress.
type JobProgress = driver.JobProgress

// MaxProgressMessageBytes is the longest message ReportProgress accepts,
// in bytes.
const MaxProgressMessageBytes = 512

// ErrInvalidProgress is returned by ReportProgress for a percent or message
// it does not accept. The error is a *ProgressError. Nothing is recorded.
var ErrInvalidProgress = errors.New("sluice: invalid progress")

// ProgressError names the argument of ReportProgress that was rejected and
// why.
type ProgressError struct {
	// Field is "percent" or "message".
	Field string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *ProgressError) Error() string {
	return fmt.Sprintf("sluice: invalid progress: %s: %s", e.Field, e.Reason)
}

// Is makes a ProgressError match ErrInvalidProgress.
func (e *ProgressError) Is(target error) bool { return target == ErrInvalidProgress }

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
	var at time.Time
	if c, ok := ctx.Value(clientKey{}).(interface{ now() time.Time }); ok {
		at = c.now() // the client's clock, which a test may control
	} else {
		at = time.Now().UTC().Truncate(time.Microsecond)
	}
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
	case !utf8.ValidString(message):
		return &ProgressError{Field: "message", Reason: "not valid UTF-8"}
	case strings.IndexByte(message, 0) >= 0:
		return &ProgressError{Field: "message", Reason: "contains a NUL character, which Postgres cannot store"}
	}
	return nil
}

// progressed returns the running jobs whose reported progress was not
// written yet, with that progress.
func (rj *runningJobs) progressed() ([]*jobRun, []*driver.JobProgress) {
	rj.mu.Lock()
	defer rj.mu.Unlock()
	var (
		runs    []*jobRun
		reports []*driver.JobProgress
	)
	for _, j := range rj.jobs {
		if p := j.progress.Load(); p != nil && p != j.progressWritten {
			runs = append(runs, j)
			reports = append(reports, p)
		}
	}
	return runs, reports
}

// writeProgress writes, in one driver call, the progress reported by the
// run's jobs since it last did, and sends an EventProgressed for each job
// it was stored on. A write that fails is tried again at the next call;
// progress that matched no job (its attempt ended meanwhile) is dropped.
func (c *Client[TTx]) writeProgress(ctx context.Context, r *run) {
	runs, reports := r.running.progressed()
	if len(runs) == 0 {
		return
	}
	items := make([]*driver.JobProgressUpdate, len(runs))
	for i, jr := range runs {
		items[i] = &driver.JobProgressUpdate{ID: jr.row.ID, Attempt: jr.row.Attempt, LockedBy: jr.row.LockedBy,
			Progress: *reports[i]}
	}
	matched, err := c.exec.JobProgress(ctx, &driver.JobProgressParams{Jobs: items})
	if err != nil {
		if ctx.Err() == nil {
			c.cfg.Logger.Warn("sluice: writing the progress of running jobs failed", "error", err)
		}
		return
	}
	now := c.now()
	for i, jr := range runs {
		jr.progressWritten = reports[i]
		if matched[i] {
			row := *jr.row
			row.Progress = reports[i]
			c.emit(EventProgressed, &row, now.Sub(row.AttemptedAt))
		}
	}
}
