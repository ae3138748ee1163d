package sluice

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/driver"
)

// DefaultListLimit is how many jobs List returns when ListFilter.Limit is 0;
// MaxListLimit is the most it returns at once.
const (
	DefaultListLimit = 100
	MaxListLimit     = 10000
)

// DefaultStatsWindow is the window of Stats' outcome figures when
// StatsFilter.Window is 0.
const DefaultStatsWindow = time.Hour

// ListOrder is the order List returns jobs in.
type ListOrder int

// The orders of List. Job IDs are version 7 UUIDs, so the order of IDs is the
// order in which jobs were enqueued.
const (
	// OldestFirst lists jobs in the order they were enqueued.
	OldestFirst ListOrder = iota
	// NewestFirst lists the most recently enqueued jobs first.
	NewestFirst
)

// JobFilter selects jobs by their fields. Every field that is set narrows
// the selection; the zero value selects every job. Time ranges include
// their start and exclude their end; a zero bound is open. Text that is
// not valid UTF-8 or holds a NUL character, which no job carries, matches
// no job: one of Topics, Queues or (with AnyTag) Tags matches nothing,
// any other field selects nothing.
type JobFilter struct {
	// Statuses, when not empty, selects jobs with one of these statuses.
	Statuses []JobStatus
	// Topics, when not empty, selects jobs of one of these topics.
	Topics []string
	// Queues, when not empty, selects jobs in one of these queues.
	Queues []string
	// UniqueKey, when not empty, selects jobs with this unique key.
	UniqueKey string
	// CreatedFrom and CreatedBefore bound when jobs were enqueued.
	CreatedFrom, CreatedBefore time.Time
	// RunAtFrom and RunAtBefore bound when jobs (may) run.
	RunAtFrom, RunAtBefore time.Time
	// Tags, when not empty, selects jobs carrying every one of these
	// tags, or, with AnyTag, at least one of them. Served by an index of
	// tags on both drivers.
	Tags   []string
	AnyTag bool
	// Metadata, when not empty, selects jobs whose metadata has each of
	// these keys with a JSON string value equal to the one given (a number
	// or a nested value never matches). No index serves it: combine it
	// with statuses, topics or tags on a large table.
	Metadata map[string]string
	// Keys, when not empty, selects jobs with one of these keys
	// (EnqueueOptions.Key).
	Keys []string
	// GroupIDs, when not empty, selects the jobs of these workflows and
	// batches (JobRow.GroupID): a workflow's tasks, a batch's jobs.
	GroupIDs []string
	// Payload, when not empty, selects jobs whose payload holds each of
	// these values at its path: keys of nested objects joined by dots
	// ("customer.id"), each 1 to 64 letters, digits, _ or -. A value is
	// a JSON scalar: a string matches an equal string, a number a number
	// of equal value (42 matches 42.0, never "42"), true, false and nil
	// (JSON null) themselves. At most MaxPayloadConditions conditions of
	// at most MaxPayloadPathKeys keys. No index serves it: combine it with
	// topics and statuses on a large table (docs/operations.md says how
	// to index a path on Postgres). A topic the client encrypts cannot be
	// filtered by payload: its payloads are ciphertext.
	Payload map[string]any
}

// ListFilter selects and pages the jobs List returns. The zero value lists
// the first DefaultListLimit jobs, oldest first.
type ListFilter struct {
	// JobFilter selects the jobs.
	JobFilter

	// Order is the order of the jobs; the default is OldestFirst.
	Order ListOrder
	// Limit is the most jobs to return: 0 means DefaultListLimit; at most
	// MaxListLimit.
	Limit int
	// Offset skips that many selected jobs. Paging by Cursor is cheaper
	// for deep pages and stable while jobs are added.
	Offset int
	// Cursor, from an earlier ListResult.NextCursor of the same Order,
	// continues the list after that result's last job. It cannot be
	// combined with Offset.
	Cursor string
}

// ListResult is one page of List.
type ListResult struct {
	// Jobs are the page's jobs, in the filter's order.
	Jobs []*JobRow
	// Total is how many jobs the filter selects, on every page.
	Total int
	// NextCursor, when not empty, continues the list after this page (see
	// ListFilter.Cursor); it is empty on the last page.
	NextCursor string
}

// List returns the jobs f selects, one page at a time, with how many it
// selects in all. A nil f means the zero ListFilter. An invalid filter
// (negative Limit or Offset, an unknown status, a malformed cursor) returns
// an error matching ErrInvalidFilter.
func (c *Client[TTx]) List(ctx context.Context, f *ListFilter) (*ListResult, error) {
	if err := c.cfg.crypt.checkPayloadFilter(f.filter()); err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return list(ctx, c.exec, f)
}

// ListTx is List inside tx: it sees the transaction's own uncommitted
// writes.
func (c *Client[TTx]) ListTx(ctx context.Context, tx TTx, f *ListFilter) (*ListResult, error) {
	if isNil(tx) {
		return nil, fmt.Errorf("list jobs: %w", ErrNilTx)
	}
	if err := c.cfg.crypt.checkPayloadFilter(f.filter()); err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return list(ctx, c.driver.UnwrapExecutor(tx), f)
}

func list(ctx context.Context, exec driver.Executor, f *ListFilter) (*ListResult, error) {
	if f == nil {
		f = &ListFilter{}
	}
	p, err := f.params()
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	limit := p.Limit
	p.Limit++ // one more tells whether there is a next page
	res, err := exec.JobList(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	out := &ListResult{Jobs: res.Jobs, Total: res.Total}
	if len(out.Jobs) > limit {
		out.Jobs = out.Jobs[:limit]
		out.NextCursor = encodeCursor(f.Order, out.Jobs[limit-1].ID)
	}
	if out.Jobs == nil {
		out.Jobs = []*JobRow{}
	}
	return out, nil
}

// filter returns f's JobFilter, nil for a nil f.
func (f *ListFilter) filter() *JobFilter {
	if f == nil {
		return nil
	}
	return &f.JobFilter
}

// params validates f and returns the driver's params for it.
func (f *ListFilter) params() (*driver.JobListParams, error) {
	jf, err := f.JobFilter.params()
	if err != nil {
		return nil, err
	}
	p := &driver.JobListParams{Filter: *jf, Desc: f.Order == NewestFirst, Offset: f.Offset, Limit: f.Limit}
	switch {
	case f.Order != OldestFirst && f.Order != NewestFirst:
		return nil, &FilterError{Field: "Order", Reason: fmt.Sprintf("unknown order %d", f.Order)}
	case f.Limit < 0 || f.Limit > MaxListLimit:
		return nil, &FilterError{Field: "Limit", Reason: fmt.Sprintf("%d is not between 0 and %d", f.Limit, MaxListLimit)}
	case f.Offset < 0:
		return nil, &FilterError{Field: "Offset", Reason: fmt.Sprintf("%d is negative", f.Offset)}
	case f.Cursor != "" && f.Offset != 0:
		return nil, &FilterError{Field: "Cursor", Reason: "cannot be combined with Offset"}
	}
	if p.Limit == 0 {
		p.Limit = DefaultListLimit
	}
	if f.Cursor != "" {
		if p.AfterID, err = decodeCursor(f.Order, f.Cursor); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// params validates f and returns the driver's filter for it.
func (f *JobFilter) params() (*driver.JobFilter, error) {
	jf, err := jobFilter(f.Statuses, f.Topics, f.Queues)
	if err != nil {
		return nil, err
	}
	jf.UniqueKey = f.UniqueKey
	for i, k := range f.Keys {
		if k == "" {
			return nil, &FilterError{Field: fmt.Sprintf("Keys[%d]", i), Reason: "empty"}
		}
	}
	jf.Keys = f.Keys
	for i, id := range f.GroupIDs {
		u, err := uuid.Parse(id)
		if err != nil || len(id) != 36 {
			return nil, &FilterError{Field: fmt.Sprintf("GroupIDs[%d]", i), Reason: fmt.Sprintf("%q is not a workflow or batch ID", id)}
		}
		jf.GroupIDs = append(jf.GroupIDs, u.String()) // as stored: lowercase
	}
	jf.CreatedFrom, jf.CreatedBefore = f.CreatedFrom, f.CreatedBefore
	jf.RunAtFrom, jf.RunAtBefore = f.RunAtFrom, f.RunAtBefore
	if err := checkTagFilter(f.Tags, f.Metadata); err != nil {
		return nil, err
	}
	jf.Tags, jf.AnyTag, jf.Metadata = f.Tags, f.AnyTag, f.Metadata
	if jf.Payload, err = payloadMatches(f.Payload); err != nil {
		return nil, err
	}
	return jf, nil
}

// jobFilter validates the list fields shared by JobFilter and StatsFilter.
func jobFilter(statuses []JobStatus, topics, queues []string) (*driver.JobFilter, error) {
	for i, s := range statuses {
		if !s.Valid() {
			return nil, &FilterError{Field: fmt.Sprintf("Statuses[%d]", i), Reason: fmt.Sprintf("unknown status %q", s)}
		}
	}
	for i, n := range topics {
		if n == "" {
			return nil, &FilterError{Field: fmt.Sprintf("Topics[%d]", i), Reason: "empty"}
		}
	}
	for i, n := range queues {
		if n == "" {
			return nil, &FilterError{Field: fmt.Sprintf("Queues[%d]", i), Reason: "empty"}
		}
	}
	return &driver.JobFilter{Statuses: statuses, Topics: topics, Queues: queues}, nil
}

// Cursors are the last job's ID behind a letter for the order, so that a
// cursor of one order is not taken for the other.
func encodeCursor(o ListOrder, id string) string {
	prefix := "o:"
	if o == NewestFirst {
		prefix = "n:"
	}
	return base64.RawURLEncoding.EncodeToString([]byte(prefix + id))
}

func decodeCursor(o ListOrder, cursor string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	want := "o:"
	if o == NewestFirst {
		want = "n:"
	}
	id, ok := strings.CutPrefix(string(b), want)
	if err != nil || !ok {
		return "", &FilterError{Field: "Cursor", Reason: "not a cursor of a list in this order"}
	}
	if _, err := uuid.Parse(id); err != nil {
		return "", &FilterError{Field: "Cursor", Reason: "not a cursor of a list in this order"}
	}
	return id, nil
}

// StatsFilter selects the jobs Stats sums up. The zero value selects every
// job, with outcomes over the last DefaultStatsWindow. A topic or queue
// that is not valid UTF-8 or holds a NUL character matches no job, as in
// JobFilter.
type StatsFilter struct {
	// Topics, when not empty, selects jobs of one of these topics.
	Topics []string
	// Queues, when not empty, selects jobs in one of these queues.
	Queues []string
	// Window is how far back the outcome figures look: 0 means
	// DefaultStatsWindow.
	Window time.Duration
	// Bucket, when not zero, also counts the window's completed and failed
	// jobs per Bucket of time into Stats.Series, for a chart: time.Minute
	// gives a point a minute. At least a second, and at most
	// MaxStatsBuckets buckets in the window.
	Bucket time.Duration
	// OldestDue, when true, also reads Stats.OldestDue: in each queue,
	// since when its longest-waiting due job has been due.
	OldestDue bool
}

// MaxStatsBuckets is the most buckets Stats counts in a window.
const MaxStatsBuckets = 10_000

// StatsBucket is how many jobs completed and failed in one bucket of a
// Stats window.
type StatsBucket = driver.JobBucket

// Stats sums up the queue: how many jobs have each status, in all, by
// topic and by queue; and of the jobs completed or failed within the window,
// the success rate and how long completed jobs ran.
type Stats struct {
	// Total is how many jobs the filter selects.
	Total int
	// ByStatus counts the jobs of each status; statuses with none are
	// absent.
	ByStatus map[JobStatus]int
	// ByTopic and ByQueue count the jobs of each status per topic and per
	// queue.
	ByTopic, ByQueue map[string]map[JobStatus]int
	// Window is the window of the figures below.
	Window time.Duration
	// Completed and Failed are how many jobs completed, and failed for
	// good, within the window.
	Completed, Failed int
	// SuccessRate is Completed / (Completed + Failed), or nil when both
	// are 0: with no outcomes in the window there is no rate.
	SuccessRate *float64
	// AvgDuration and P95Duration are the mean and 95th percentile of how
	// long the completed jobs' final attempts ran, from claim to
	// completion; zero when none completed.
	AvgDuration, P95Duration time.Duration
	// Series counts, when StatsFilter.Bucket is set, the jobs completed and
	// failed per bucket, oldest first: every bucket from the one holding
	// the window's start to the one holding now, those without any
	// included. Buckets are aligned on the Unix epoch, so a minute's
	// bucket starts on a whole minute (UTC).
	Series []StatsBucket
	// Paused are the queues paused (see Client.PauseQueue), sorted, whatever
	// the filter; nil when none is. Client.QueueStates tells more.
	Paused []string
	// OldestDue holds, when StatsFilter.OldestDue is set, for each queue
	// with a pending job that is due (its RunAt passed, and it waits for
	// no other job), the RunAt of the one due the longest: now minus it
	// is how long the queue's oldest due job has waited for a worker.
	// Queues with no due job are absent. It is read through the claim
	// index, a probe per queue and priority of pending jobs, whatever
	// the backlog.
	OldestDue map[string]time.Time
}

// Stats sums up the jobs f selects (nil means all). An invalid filter
// returns an error matching ErrInvalidFilter.
func (c *Client[TTx]) Stats(ctx context.Context, f *StatsFilter) (*Stats, error) {
	return c.stats(ctx, c.exec, f)
}

// StatsTx is Stats inside tx: it counts the transaction's own uncommitted
// writes.
func (c *Client[TTx]) StatsTx(ctx context.Context, tx TTx, f *StatsFilter) (*Stats, error) {
	if isNil(tx) {
		return nil, fmt.Errorf("stats: %w", ErrNilTx)
	}
	return c.stats(ctx, c.driver.UnwrapExecutor(tx), f)
}

func (c *Client[TTx]) stats(ctx context.Context, exec driver.Executor, f *StatsFilter) (*Stats, error) {
	if f == nil {
		f = &StatsFilter{}
	}
	jf, err := jobFilter(nil, f.Topics, f.Queues)
	if err != nil {
		return nil, fmt.Errorf("stats: %w", err)
	}
	window := f.Window
	switch {
	case window < 0:
		return nil, fmt.Errorf("stats: %w", &FilterError{Field: "Window", Reason: fmt.Sprintf("%s is negative", window)})
	case window == 0:
		window = DefaultStatsWindow
	}
	if err := checkBucket(f.Bucket, window); err != nil {
		return nil, fmt.Errorf("stats: %w", err)
	}
	now := c.now()
	params := &driver.JobStatsParams{Filter: *jf, Since: now.Add(-window), Bucket: f.Bucket}
	if f.OldestDue {
		params.DueAt = now
	}
	ds, err := exec.JobStats(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("stats: %w", err)
	}
	st := &Stats{
		ByStatus: map[JobStatus]int{}, ByTopic: map[string]map[JobStatus]int{}, ByQueue: map[string]map[JobStatus]int{},
		Window: window, Completed: ds.Completed, Failed: ds.Failed,
		AvgDuration: ds.AvgDuration, P95Duration: ds.P95Duration, OldestDue: ds.OldestDue,
	}
	add := func(m map[string]map[JobStatus]int, key string, cnt driver.JobCount) {
		if m[key] == nil {
			m[key] = map[JobStatus]int{}
		}
		m[key][cnt.Status] += cnt.Count
	}
	for _, cnt := range ds.Counts {
		st.Total += cnt.Count
		st.ByStatus[cnt.Status] += cnt.Count
		add(st.ByTopic, cnt.Topic, cnt)
		add(st.ByQueue, cnt.Queue, cnt)
	}
	if n := ds.Completed + ds.Failed; n > 0 {
		rate := float64(ds.Completed) / float64(n)
		st.SuccessRate = &rate
	}
	if f.Bucket > 0 {
		st.Series = fillSeries(ds.Series, now.Add(-window), now, f.Bucket)
	}
	states, err := exec.QueueStateList(ctx, &driver.QueueStateListParams{})
	if err != nil {
		return nil, fmt.Errorf("stats: %w", err)
	}
	for _, s := range states {
		if s.Paused {
			st.Paused = append(st.Paused, s.Queue)
		}
	}
	return st, nil
}

// ClientInfo is a started client as it records itself: its ID (the
// LockedBy of the jobs it holds), host, process ID, topics, queues and how
// many jobs of each queue it works at once, when it started and when it
// was last seen.
type ClientInfo = driver.ClientRow

// Clients returns the clients recorded in the database, sorted by ID:
// every started client records itself at Start, refreshes its record at
// every HeartbeatInterval and deletes it at Stop. A record whose SeenAt is
// older than a few heartbeat intervals belongs to a process that died;
// such records are deleted ten minutes after they were last refreshed.
func (c *Client[TTx]) Clients(ctx context.Context) ([]*ClientInfo, error) {
	rows, err := c.exec.ClientList(ctx, &driver.ClientListParams{})
	if err != nil {
		return nil, fmt.Errorf("list clients: %w", err)
	}
	return rows, nil
}
