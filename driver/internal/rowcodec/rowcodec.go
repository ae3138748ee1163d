// Package rowcodec holds what every driver does the same way with job rows:
// the rows an insert stores, the times as stored, and the decoding of the
// errors column.
package rowcodec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// Errors decodes a job's errors column: a JSON array of attempt errors, or
// nothing. Times come back in UTC, as the driver contract requires.
func Errors(data []byte) ([]driver.AttemptError, error) {
	if len(data) == 0 {
		return nil, nil
	}
	var errs []driver.AttemptError
	if err := json.Unmarshal(data, &errs); err != nil {
		return nil, err
	}
	for i := range errs {
		errs[i].At = errs[i].At.UTC()
		if !errs[i].StartedAt.IsZero() {
			errs[i].StartedAt = errs[i].StartedAt.UTC()
		}
	}
	return errs, nil
}

// Stored returns t as drivers store it: in UTC, cut to the microsecond
// (floored, as SQLite's integer microseconds and Postgres's timestamptz
// both do). The zero time stays zero.
func Stored(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return time.UnixMicro(t.UnixMicro()).UTC()
}

// NewRow returns the row j is stored as right after its insert.
func NewRow(j *driver.JobInsert) *driver.JobRow {
	return &driver.JobRow{
		ID:         j.ID,
		Topic:      j.Topic,
		Queue:      j.Queue,
		Priority:   j.Priority,
		Payload:    bytes.Clone(j.Payload),
		Status:     driver.StatusPending,
		MaxRetries: j.MaxRetries,
		RunAt:      Stored(j.RunAt),
		CreatedAt:  Stored(j.CreatedAt),
		UniqueKey:  j.UniqueKey,
		Tags:       cloneTags(j.Tags),
		Metadata:   bytes.Clone(j.Metadata),
		DependsOn:  cloneTags(j.DependsOn),
		Waiting:    len(j.DependsOn) > 0,
		Key:        j.Key,
		Sequence:   j.Sequence,
		GroupID:    j.GroupID,
		Task:       j.Task,
		CallbackOf: j.CallbackOf,
	}
}

// cloneTags returns a copy of tags, nil when there are none.
func cloneTags(tags []string) []string {
	if len(tags) == 0 {
		return nil
	}
	return append([]string(nil), tags...)
}

// SplitInsert checks the jobs of one insert and splits them into plain jobs
// (no unique key), which an insert cannot turn away, and the indexes of the
// unique ones. It returns one result per job, the plain jobs' already
// holding the rows they will be stored as.
func SplitInsert(jobs []*driver.JobInsert) (results []driver.JobInsertResult, plain []*driver.JobInsert, unique []int, err error) {
	results = make([]driver.JobInsertResult, len(jobs))
	for i, j := range jobs {
		if j == nil {
			return nil, nil, nil, fmt.Errorf("job %d is nil", i)
		}
		if len(j.DependsOn) > 0 && !j.OnDependencyFailure.Valid() {
			return nil, nil, nil, fmt.Errorf("job %d: dependency policy %q is not %q or %q", i,
				j.OnDependencyFailure, driver.DependencyCancel, driver.DependencyRun)
		}
		if j.Sequence != "" && (!j.Sequence.Valid() || j.Key == "") {
			return nil, nil, nil, fmt.Errorf("job %d: sequence policy %q needs a key and to be %q or %q", i,
				j.Sequence, driver.SequenceHold, driver.SequenceContinue)
		}
		if j.UniqueKey == "" {
			results[i].Job = NewRow(j)
			plain = append(plain, j)
		} else {
			unique = append(unique, i)
		}
	}
	return results, plain, unique, nil
}

// Waits returns the indexes of the jobs that wait for others.
func Waits(jobs []*driver.JobInsert) []int {
	var waits []int
	for i, j := range jobs {
		if len(j.DependsOn) > 0 {
			waits = append(waits, i)
		}
	}
	return waits
}

// MarkWaiting marks, among results, the rows of the waiting jobs (waits,
// as Waits returns them) that were inserted rather than found live: a row
// read back before its job was stored waiting.
func MarkWaiting(results []driver.JobInsertResult, jobs []*driver.JobInsert, waits []int) {
	for _, i := range waits {
		if r := results[i]; r.Job != nil && !r.Duplicate {
			r.Job.DependsOn, r.Job.Waiting = cloneTags(jobs[i].DependsOn), true
			r.Job.RunAt = Stored(jobs[i].RunAt)
		}
	}
}

// DependencyFailed reports whether a dependency whose status is status
// (empty when it is gone) counts as failed for its dependents: failed for
// good, cancelled or gone. A release pass reads it again before it cancels
// a dependent, as a failed job may have been requeued since the pass read
// the waiting jobs.
func DependencyFailed(status driver.JobStatus) bool {
	return status == "" || status == driver.StatusFailed || status == driver.StatusCancelled
}

// Settle says what becomes of a waiting job of the given policy with n
// dependencies, of which done completed and failed failed for good, were
// cancelled or are gone: released, cancelled, or neither (it waits on).
func Settle(policy driver.DependencyPolicy, n, done, failed int) (release, cancel bool) {
	switch {
	case done == n:
		return true, false
	case failed > 0 && policy == driver.DependencyCancel:
		return false, true
	case failed > 0 && done+failed == n:
		return true, false
	}
	return false, false
}
