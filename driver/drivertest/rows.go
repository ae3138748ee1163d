package drivertest

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

// pendingRow is the row j must be stored as right after its insert.
func pendingRow(j *driver.JobInsert) *driver.JobRow {
	return &driver.JobRow{
		ID:         j.ID,
		Topic:      j.Topic,
		Queue:      j.Queue,
		Priority:   j.Priority,
		Payload:    bytes.Clone(j.Payload),
		Status:     driver.StatusPending,
		MaxRetries: j.MaxRetries,
		RunAt:      j.RunAt,
		CreatedAt:  j.CreatedAt,
		UniqueKey:  j.UniqueKey,
		Tags:       slices.Clone(j.Tags),
		Metadata:   bytes.Clone(j.Metadata),
		DependsOn:  slices.Clone(j.DependsOn),
		Waiting:    len(j.DependsOn) > 0,
	}
}

// cloneRow returns a deep copy of r, to be changed into an expectation.
func cloneRow(r *driver.JobRow) *driver.JobRow {
	c := *r
	c.Payload = bytes.Clone(r.Payload)
	c.Result = bytes.Clone(r.Result)
	c.Errors = slices.Clone(r.Errors)
	c.Tags = slices.Clone(r.Tags)
	c.Metadata = bytes.Clone(r.Metadata)
	c.Logs = slices.Clone(r.Logs)
	if r.Progress != nil {
		p := *r.Progress
		c.Progress = &p
	}
	return &c
}

// claimedRow is the row a claim of the pending row r by client at now, with
// a lease until until, must leave.
func claimedRow(r *driver.JobRow, client string, now, until time.Time) *driver.JobRow {
	w := cloneRow(r)
	w.Status = driver.StatusProcessing
	w.Attempt++
	w.LockedBy = client
	w.LockedUntil = until
	w.AttemptedAt = now
	w.AttemptedBy = client
	return w
}

// unlocked returns a copy of r with its claim cleared and the given status.
func unlocked(r *driver.JobRow, status driver.JobStatus) *driver.JobRow {
	w := cloneRow(r)
	w.Status = status
	w.LockedBy = ""
	w.LockedUntil = time.Time{}
	return w
}

// cloneInsert returns a deep copy of j, to check that params are not
// modified.
func cloneInsert(j *driver.JobInsert) *driver.JobInsert {
	c := *j
	c.Payload = bytes.Clone(j.Payload)
	c.Tags = slices.Clone(j.Tags)
	c.Metadata = bytes.Clone(j.Metadata)
	return &c
}

// requireRow requires got to be want, field by field: times compared as
// instants and returned in UTC, JSON compared as JSON.
func requireRow(t *testing.T, want, got *driver.JobRow) {
	t.Helper()
	require.NotNil(t, got, "job %s", want.ID)
	msg := func(field string) string { return "job " + want.ID + ": " + field }
	require.Equal(t, want.ID, got.ID, msg("ID"))
	require.Equal(t, want.Topic, got.Topic, msg("Topic"))
	require.Equal(t, want.Queue, got.Queue, msg("Queue"))
	require.Equal(t, want.Priority, got.Priority, msg("Priority"))
	require.Equal(t, want.Status, got.Status, msg("Status"))
	require.Equal(t, want.Attempt, got.Attempt, msg("Attempt"))
	require.Equal(t, want.MaxRetries, got.MaxRetries, msg("MaxRetries"))
	require.Equal(t, want.LockedBy, got.LockedBy, msg("LockedBy"))
	require.Equal(t, want.AttemptedBy, got.AttemptedBy, msg("AttemptedBy"))
	require.Equal(t, want.UniqueKey, got.UniqueKey, msg("UniqueKey"))
	requireJSON(t, want.Payload, got.Payload, msg("Payload"))
	requireJSON(t, want.Result, got.Result, msg("Result"))
	requireTime(t, want.RunAt, got.RunAt, msg("RunAt"))
	requireTime(t, want.CreatedAt, got.CreatedAt, msg("CreatedAt"))
	requireTime(t, want.AttemptedAt, got.AttemptedAt, msg("AttemptedAt"))
	requireTime(t, want.FinalizedAt, got.FinalizedAt, msg("FinalizedAt"))
	requireTime(t, want.LockedUntil, got.LockedUntil, msg("LockedUntil"))
	requireErrors(t, want.Errors, got.Errors, msg("Errors"))
	requireProgress(t, want.Progress, got.Progress, msg("Progress"))
	require.Equal(t, want.Tags, got.Tags, msg("Tags"))
	requireJSON(t, want.Metadata, got.Metadata, msg("Metadata"))
	requireLogs(t, want.Logs, got.Logs, msg("Logs"))
	require.Equal(t, want.LogsDropped, got.LogsDropped, msg("LogsDropped"))
	require.Equal(t, want.DependsOn, got.DependsOn, msg("DependsOn"))
	require.Equal(t, want.Waiting, got.Waiting, msg("Waiting"))
}

// requireLogs requires got to be the log records want, in order.
func requireLogs(t *testing.T, want, got []driver.LogRecord, msg string) {
	t.Helper()
	require.Len(t, got, len(want), msg)
	for i := range want {
		m := fmt.Sprintf("%s[%d]", msg, i)
		require.Equal(t, want[i].Attempt, got[i].Attempt, m+".Attempt")
		require.Equal(t, want[i].Level, got[i].Level, m+".Level")
		require.Equal(t, want[i].Message, got[i].Message, m+".Message")
		requireJSON(t, want[i].Attrs, got[i].Attrs, m+".Attrs")
		requireTime(t, want[i].Time, got[i].Time, m+".Time")
	}
}

// requireProgress requires got to be the progress want (both nil counts).
func requireProgress(t *testing.T, want, got *driver.JobProgress, msg string) {
	t.Helper()
	if want == nil {
		require.Nilf(t, got, "%s: want none", msg)
		return
	}
	require.NotNilf(t, got, "%s: want %+v, got none", msg, *want)
	require.Equal(t, want.Attempt, got.Attempt, msg+".Attempt")
	require.Equal(t, want.Percent, got.Percent, msg+".Percent")
	require.Equal(t, want.Message, got.Message, msg+".Message")
	requireTime(t, want.At, got.At, msg+".At")
}

// requireTime requires got to be the instant want (both zero counts), and a
// non-zero got to be in UTC.
func requireTime(t *testing.T, want, got time.Time, msg string) {
	t.Helper()
	if want.IsZero() {
		require.Truef(t, got.IsZero(), "%s: want zero time, got %s", msg, got.Format(time.RFC3339Nano))
		return
	}
	require.Truef(t, want.Equal(got), "%s: want %s, got %s",
		msg, want.UTC().Format(time.RFC3339Nano), got.Format(time.RFC3339Nano))
	require.Truef(t, got.Location() == time.UTC, "%s: returned in location %q (%s), want UTC",
		msg, got.Location(), got.Format("-07:00"))
}

// requireJSON requires got to be the same JSON as want; an empty want
// requires an empty got.
func requireJSON(t *testing.T, want, got []byte, msg string) {
	t.Helper()
	if len(want) == 0 {
		require.Emptyf(t, got, "%s: want none, got %s", msg, got)
		return
	}
	require.JSONEq(t, string(want), string(got), msg)
}

// requireErrors requires got to be the attempt errors want, in order.
func requireErrors(t *testing.T, want, got []driver.AttemptError, msg string) {
	t.Helper()
	require.Len(t, got, len(want), msg)
	for i := range want {
		m := fmt.Sprintf("%s[%d]", msg, i)
		require.Equal(t, want[i].Attempt, got[i].Attempt, m+".Attempt")
		require.Equal(t, want[i].Error, got[i].Error, m+".Error")
		require.Equal(t, want[i].Trace, got[i].Trace, m+".Trace")
		require.Equal(t, want[i].ClientID, got[i].ClientID, m+".ClientID")
		requireTime(t, want[i].At, got[i].At, m+".At")
		requireTime(t, want[i].StartedAt, got[i].StartedAt, m+".StartedAt")
	}
}

// ids returns the IDs of rows, in order.
func ids(rows []*driver.JobRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out
}

// insertIDs returns the IDs of jobs, in order.
func insertIDs(jobs []*driver.JobInsert) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

// sortedIDs returns n new IDs in ascending order.
func sortedIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = newID()
	}
	sort.Strings(out)
	return out
}
