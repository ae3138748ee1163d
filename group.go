package sluice

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/driver"
)

// GroupKind is what a group of jobs is: a workflow or a batch.
type GroupKind = driver.GroupKind

// The kinds of groups.
const (
	// KindWorkflow is a workflow (NewWorkflow).
	KindWorkflow = driver.GroupWorkflow
	// KindBatch is a batch (NewBatch).
	KindBatch = driver.GroupBatch
)

// GroupOutcome is how a done group ended: success when every job of it
// completed, failure when one failed for good or was cancelled.
type GroupOutcome = driver.GroupOutcome

// The outcomes of a done group.
const (
	OutcomeSuccess = driver.OutcomeSuccess
	OutcomeFailure = driver.OutcomeFailure
)

// GroupStatus is where a group is: open, running, completed, failed.
type GroupStatus string

// The statuses of a group.
const (
	// GroupOpen: a batch kept open; it takes more jobs and is never done.
	GroupOpen GroupStatus = "open"
	// GroupRunning: some job of it is pending or processing.
	GroupRunning GroupStatus = "running"
	// GroupCompleted: every job of it completed.
	GroupCompleted GroupStatus = "completed"
	// GroupFailed: none of its jobs is live, and some failed for good or
	// was cancelled.
	GroupFailed GroupStatus = "failed"
)

// MaxGroupJobs is the most jobs a workflow (tasks) or a batch may hold.
const MaxGroupJobs = driver.MaxGroupJobs

// ErrInvalidGroup is returned for a workflow or a batch that cannot be
// enqueued: a cycle, a task named twice, a dependency on a task that is
// not there, too many jobs, a job that cannot be. The error is a
// *GroupError.
var ErrInvalidGroup = errors.New("sluice: invalid workflow or batch")

// ErrGroupClosed is returned when jobs are added to a batch that is
// closed (see Batch.KeepOpen and Client.CloseBatch).
var ErrGroupClosed = fmt.Errorf("sluice: %w", driver.ErrGroupClosed)

// GroupError says why a workflow or a batch cannot be enqueued. It matches
// ErrInvalidGroup, and the error of the job at fault when there is one.
type GroupError struct {
	// Name is the workflow's or batch's name.
	Name string
	// Task is the task (or, in a batch, the job's index) at fault, if one
	// is.
	Task string
	// Part and Index place the job at fault, when one is: Part is
	// "Tasks" (a workflow's task), "Jobs" (a batch's job, or one given to
	// AddToBatch), or "OnSuccess", "OnFailure" or "OnComplete" (a
	// callback), and Index is its place there, from 0, in the order
	// added. Part is empty when the fault is the whole group's.
	Part  string
	Index int
	// Reason says what is wrong; Err is the job's error, if the job is
	// at fault.
	Reason string
	Err    error
}

// Error implements error.
func (e *GroupError) Error() string {
	msg := "sluice: " + e.Name
	if e.Task != "" {
		msg += ": " + e.Task
	}
	if e.Err != nil {
		return msg + ": " + e.Err.Error()
	}
	return msg + ": " + e.Reason
}

// Unwrap returns the job's error, if any.
func (e *GroupError) Unwrap() error { return e.Err }

// Is makes a GroupError match ErrInvalidGroup.
func (e *GroupError) Is(target error) bool { return target == ErrInvalidGroup }

// Group is a workflow or a batch as stored, with how many of its jobs
// there are of each status.
type Group struct {
	ID        string    `json:"id"`
	Kind      GroupKind `json:"kind"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	// Status sums up its jobs (see GroupStatus).
	Status GroupStatus `json:"status"`
	// Counts are how many of its jobs there are of each status.
	Counts map[JobStatus]int `json:"counts"`
	// StartedAt is when its first job started; FinishedAt when its last
	// finished, zero while one is live.
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// SettledAt is when it was found done and its callbacks inserted, and
	// Outcome how it ended; zero and empty until then.
	SettledAt time.Time    `json:"settled_at,omitzero"`
	Outcome   GroupOutcome `json:"outcome,omitempty"`
	// Jobs are its jobs, oldest first: filled by GetWorkflow and
	// GetBatch, nil in lists.
	Jobs []*JobRow `json:"jobs,omitempty"`
	// Callbacks are its callbacks, those on success first, then on
	// failure, then on completion, each in the order added: filled by
	// GetWorkflow and GetBatch, nil in lists.
	Callbacks []*GroupCallback `json:"callbacks,omitempty"`
}

// GroupCallback is one callback of a workflow or batch (OnSuccess,
// OnFailure, OnComplete), with its job once enqueued.
type GroupCallback struct {
	// On says when it is enqueued: "success", "failure" or "complete".
	On string `json:"on"`
	// Topic is its job's topic; JobID is the ID its job has once
	// enqueued (a retry of the group gives it a new one).
	Topic string `json:"topic"`
	JobID string `json:"job_id"`
	// Job is its job: nil until the group settled with an outcome that
	// enqueues it, and once retention deleted it.
	Job *JobRow `json:"job,omitempty"`
}

// groupCallbacksOf returns the callbacks of g, with the jobs of those
// enqueued read in one query.
func (c *Client[TTx]) groupCallbacksOf(ctx context.Context, g *driver.GroupRow) ([]*GroupCallback, error) {
	if g.Callbacks == nil {
		return nil, nil
	}
	var out []*GroupCallback
	for _, part := range []struct {
		on   string
		list []*driver.JobInsert
	}{{"success", g.Callbacks.OnSuccess}, {"failure", g.Callbacks.OnFailure}, {"complete", g.Callbacks.OnComplete}} {
		for _, j := range part.list {
			out = append(out, &GroupCallback{On: part.on, Topic: j.Topic, JobID: j.ID})
		}
	}
	if g.SettledAt.IsZero() || len(out) == 0 {
		return out, nil
	}
	ids := make([]string, len(out))
	for i, cb := range out {
		ids[i] = cb.JobID
	}
	list, err := c.exec.JobList(ctx, &driver.JobListParams{Filter: driver.JobFilter{IDs: ids}, Limit: len(ids)})
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*JobRow, len(list.Jobs))
	for _, j := range list.Jobs {
		byID[j.ID] = j
	}
	for _, cb := range out {
		cb.Job = byID[cb.JobID]
	}
	return out, nil
}

// newGroup returns the Group of a stored group.
func newGroup(g *driver.GroupRow) *Group {
	out := &Group{ID: g.ID, Kind: g.Kind, Name: g.Name, CreatedAt: g.CreatedAt, Counts: g.Counts,
		StartedAt: g.StartedAt, FinishedAt: g.FinishedAt, SettledAt: g.SettledAt, Outcome: g.Outcome}
	if out.Counts == nil {
		out.Counts = map[JobStatus]int{}
	}
	switch c := out.Counts; {
	case g.Open:
		out.Status = GroupOpen
	case c[StatusPending]+c[StatusProcessing] > 0:
		out.Status = GroupRunning
	case c[StatusFailed]+c[StatusCancelled] > 0:
		out.Status = GroupFailed
	default:
		out.Status = GroupCompleted
	}
	return out
}

// GroupFilter selects the groups ListWorkflows and ListBatches return.
type GroupFilter struct {
	// Name, when not empty, selects groups of this name.
	Name string
	// Statuses, when not empty, selects groups of one of these statuses.
	Statuses []GroupStatus
	// CreatedFrom and CreatedBefore, when not zero, bound CreatedAt.
	CreatedFrom, CreatedBefore time.Time
	// Limit is the most groups to return: 0 means DefaultListLimit; at
	// most MaxListLimit. Cursor, from a GroupList's NextCursor, continues
	// after it.
	Limit  int
	Cursor string
}

// GroupList is one page of groups, newest first.
type GroupList struct {
	Groups []*Group `json:"items"`
	// NextCursor, when not empty, continues the list (GroupFilter.Cursor).
	NextCursor string `json:"next_cursor,omitempty"`
}

// getGroup reads the group id of kind, with its jobs.
func (c *Client[TTx]) getGroup(ctx context.Context, kind GroupKind, id string) (*Group, error) {
	g, err := c.checkGroup(ctx, kind, id)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", kind, err)
	}
	id = g.ID
	out := newGroup(g)
	list, err := c.exec.JobList(ctx, &driver.JobListParams{Filter: driver.JobFilter{GroupIDs: []string{id}}, Limit: MaxGroupJobs})
	if err != nil {
		return nil, fmt.Errorf("get %s %s: %w", kind, id, err)
	}
	out.Jobs = list.Jobs
	if out.Callbacks, err = c.groupCallbacksOf(ctx, g); err != nil {
		return nil, fmt.Errorf("get %s %s: callbacks: %w", kind, id, err)
	}
	return out, nil
}

// listGroups reads a page of groups of kind.
func (c *Client[TTx]) listGroups(ctx context.Context, kind GroupKind, f *GroupFilter) (*GroupList, error) {
	if f == nil {
		f = &GroupFilter{}
	}
	limit := f.Limit
	switch {
	case limit == 0:
		limit = DefaultListLimit
	case limit < 0 || limit > MaxListLimit:
		return nil, fmt.Errorf("list %ss: %w", kind, &FilterError{Field: "Limit", Reason: fmt.Sprintf("%d is not between 0 and %d", limit, MaxListLimit)})
	}
	for i, s := range f.Statuses {
		if !slices.Contains([]GroupStatus{GroupOpen, GroupRunning, GroupCompleted, GroupFailed}, s) {
			return nil, fmt.Errorf("list %ss: %w", kind, &FilterError{Field: fmt.Sprintf("Statuses[%d]", i), Reason: fmt.Sprintf("unknown status %q", s)})
		}
	}
	out := &GroupList{Groups: []*Group{}}
	after := f.Cursor
	// A page is read, and read on, until limit groups pass the statuses.
	for len(out.Groups) < limit {
		page, err := c.exec.GroupList(ctx, &driver.GroupListParams{Kind: kind, Name: f.Name, CreatedFrom: f.CreatedFrom,
			CreatedBefore: f.CreatedBefore, Limit: limit, AfterID: after})
		if err != nil {
			return nil, fmt.Errorf("list %ss: %w", kind, err)
		}
		for _, g := range page {
			after = g.ID
			if gr := newGroup(g); len(f.Statuses) == 0 || slices.Contains(f.Statuses, gr.Status) {
				out.Groups = append(out.Groups, gr)
				if len(out.Groups) == limit {
					out.NextCursor = g.ID
					break
				}
			}
		}
		if len(page) < limit {
			out.NextCursor = ""
			break
		}
	}
	return out, nil
}

// insertGroup stores group g and its jobs through exec, as insert stores
// jobs: with their enqueued events, the change feed and wake-ups.
func (c *Client[TTx]) insertGroup(ctx context.Context, exec driver.Executor, inTx bool, g driver.GroupRow,
	inserts []*driver.JobInsert, now time.Time) ([]*JobRow, error) {
	if err := c.resolveSequences(ctx, exec, inserts); err != nil {
		return nil, err
	}
	held := !inTx && c.events.holdEnqueued(inserts)
	res, err := exec.GroupInsert(ctx, &driver.GroupInsertParams{Group: g, Jobs: inserts})
	if err != nil {
		if held {
			c.events.releaseEnqueued(inserts, nil, time.Time{})
		}
		return nil, err
	}
	c.noteInserted(inTx, held, inserts, res.Jobs, now)
	return res.Jobs, nil
}

// noteInserted tells the events held for inserts (when held), the change
// feed and the claim loops of the jobs of a group stored as rows.
func (c *Client[TTx]) noteInserted(inTx, held bool, inserts []*driver.JobInsert, rows []*JobRow, now time.Time) {
	if held {
		results := make([]driver.JobInsertResult, len(rows))
		for i, row := range rows {
			results[i] = driver.JobInsertResult{Job: row}
		}
		c.events.releaseEnqueued(inserts, results, c.now())
	}
	if !inTx && c.feed.running() {
		c.feed.note(rows, false)
	}
	c.wakeFor(inserts, now, !inTx)
}

// groupID checks a workflow's or batch's ID and returns it as stored
// (lowercase); one that is not a UUID names no group: ErrNotFound.
func groupID(id string) (string, error) {
	u, err := uuid.Parse(id)
	if err != nil || len(id) != 36 {
		return "", fmt.Errorf("%w: %q is not a workflow or batch ID", ErrNotFound, id)
	}
	return u.String(), nil
}

// callbackInserts returns the stored form of callbacks, each checked as
// an enqueue checks it.
func (c *Client[TTx]) callbackInserts(name string, cb *groupCallbacks, now time.Time) (*driver.GroupCallbacks, error) {
	if cb == nil {
		return nil, nil
	}
	out := &driver.GroupCallbacks{}
	for _, part := range []struct {
		name string
		from []EnqueueParams
		to   *[]*driver.JobInsert
	}{{"OnSuccess", cb.onSuccess, &out.OnSuccess}, {"OnFailure", cb.onFailure, &out.OnFailure}, {"OnComplete", cb.onComplete, &out.OnComplete}} {
		for i, p := range part.from {
			ins, err := c.newInsert(p.Args, p.Options, now)
			switch {
			case err != nil:
			case ins.UniqueKey != "":
				err = &OptionsError{Field: "UniqueKey", Reason: "a callback has no unique key"}
			case len(ins.DependsOn) > 0:
				err = &OptionsError{Field: "DependsOn", Reason: "a callback has no dependencies"}
			}
			if err != nil {
				return nil, &GroupError{Name: name, Task: fmt.Sprintf("%s[%d]", part.name, i), Part: part.name, Index: i, Err: err}
			}
			*part.to = append(*part.to, ins)
		}
	}
	return out, nil
}

// groupCallbacks are the callbacks a builder collects.
type groupCallbacks struct {
	onSuccess, onFailure, onComplete []EnqueueParams
}

// cancelGroup cancels the pending and running jobs of the group id of
// kind, as CancelMany does, settles what that finished, and returns the
// jobs cancelled.
func (c *Client[TTx]) cancelGroup(ctx context.Context, kind GroupKind, id string) ([]*JobRow, error) {
	g, err := c.checkGroup(ctx, kind, id)
	if err != nil {
		return nil, fmt.Errorf("cancel %s: %w", kind, err)
	}
	gid := g.ID
	rows, err := c.actMany(ctx, c.exec, actCancel, &JobFilter{GroupIDs: []string{gid}})
	if err != nil {
		return nil, fmt.Errorf("cancel %s %s: %w", kind, gid, err)
	}
	// The group is done now unless it is open: its callbacks go in at
	// once (a crash before that leaves them to a running client's pass).
	if _, err := c.exec.GroupSettle(ctx, &driver.GroupSettleParams{Now: c.now(), Limit: releaseLimit}); err != nil {
		return rows, fmt.Errorf("cancel %s %s: settle: %w", kind, gid, err)
	}
	return rows, nil
}

// retryGroup retries the group id of kind (see GroupExecutor.GroupRetry)
// and returns the jobs it changed.
func (c *Client[TTx]) retryGroup(ctx context.Context, kind GroupKind, id string) ([]*JobRow, error) {
	g, err := c.checkGroup(ctx, kind, id)
	if err != nil {
		return nil, fmt.Errorf("retry %s: %w", kind, err)
	}
	gid := g.ID
	// The callbacks go in again once the group is done again, as new jobs.
	var cb *driver.GroupCallbacks
	if g.Callbacks != nil {
		var rebindErr error
		renew := func(list []*driver.JobInsert) []*driver.JobInsert {
			out := make([]*driver.JobInsert, len(list))
			for i, j := range list {
				fresh := *j
				if err := c.cfg.crypt.rebind(&fresh, c.cfg.NewJobID()); err != nil && rebindErr == nil {
					rebindErr = err
				}
				out[i] = &fresh
			}
			return out
		}
		cb = &driver.GroupCallbacks{OnSuccess: renew(g.Callbacks.OnSuccess), OnFailure: renew(g.Callbacks.OnFailure),
			OnComplete: renew(g.Callbacks.OnComplete)}
		if rebindErr != nil {
			return nil, fmt.Errorf("retry %s %s: callback: %w", kind, gid, rebindErr)
		}
	}
	rows, err := c.exec.GroupRetry(ctx, &driver.GroupRetryParams{ID: gid, Now: c.now(), Retries: retries(c.cfg.MaxRetries),
		Callbacks: cb})
	if err != nil {
		return nil, fmt.Errorf("retry %s %s: %w", kind, gid, err)
	}
	c.feed.note(rows, false)
	return rows, nil
}

// checkGroup returns the group id when it is of kind, an error matching
// ErrNotFound when not.
func (c *Client[TTx]) checkGroup(ctx context.Context, kind GroupKind, id string) (*driver.GroupRow, error) {
	gid, err := groupID(id)
	if err != nil {
		return nil, err
	}
	g, err := c.exec.GroupGet(ctx, &driver.GroupGetParams{ID: gid})
	if err == nil && g.Kind != kind {
		err = driver.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", gid, err)
	}
	return g, nil
}
