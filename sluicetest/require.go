package sluicetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// RequireOpts are the optional checks of RequireEnqueued and its kin: each
// field that is set must match the job; the zero value checks nothing but
// the topic.
type RequireOpts struct {
	// Queue, when not empty, is the job's queue.
	Queue string
	// Priority, when not nil, is the job's priority.
	Priority *int
	// RunAt, when not zero, is when the job may run, to the microsecond.
	RunAt time.Time
	// Status, when not empty, is the job's status. Without it, jobs of
	// every status count: a job already worked was still enqueued.
	Status sluice.JobStatus
	// MaxRetries, when not nil, is the job's retries after its first
	// attempt.
	MaxRetries *int
	// UniqueKey, when not empty, is the job's unique key.
	UniqueKey string
	// Tags, when not empty, are tags the job carries (it may carry more).
	Tags []string
	// Metadata, when not empty, are keys the job's metadata has, each with
	// a value equal to the one given once both are encoded as JSON (it may
	// have more keys).
	Metadata map[string]any
}

// RequireEnqueued checks that the client's database holds exactly one job
// of T's topic that matches opts (nil checks the topic only), and returns
// it with its arguments decoded. It fails the test if there is none, or
// more than one, saying how each job of the topic differs from opts.
//
//	job := sluicetest.RequireEnqueued[EmailArgs](t, client, &sluicetest.RequireOpts{Queue: "mail"})
//	require.Equal(t, "a@example.com", job.Args.To)
func RequireEnqueued[T sluice.JobArgs, TTx any](tb testing.TB, client *sluice.Client[TTx], opts *RequireOpts) *sluice.Job[T] {
	tb.Helper()
	return requireEnqueued[T](tb, lister(tb, client, nil), opts)
}

// RequireEnqueuedTx is RequireEnqueued inside tx: it sees the jobs tx
// enqueued before it commits.
func RequireEnqueuedTx[T sluice.JobArgs, TTx any](tb testing.TB, client *sluice.Client[TTx], tx TTx, opts *RequireOpts) *sluice.Job[T] {
	tb.Helper()
	return requireEnqueued[T](tb, lister(tb, client, &tx), opts)
}

// RequireNotEnqueued checks that the client's database holds no job of T's
// topic that matches opts (nil: no job of the topic at all). It fails the
// test, listing the jobs that match, if there is one.
func RequireNotEnqueued[T sluice.JobArgs, TTx any](tb testing.TB, client *sluice.Client[TTx], opts *RequireOpts) {
	tb.Helper()
	requireNotEnqueued[T](tb, lister(tb, client, nil), opts)
}

// RequireNotEnqueuedTx is RequireNotEnqueued inside tx.
func RequireNotEnqueuedTx[T sluice.JobArgs, TTx any](tb testing.TB, client *sluice.Client[TTx], tx TTx, opts *RequireOpts) {
	tb.Helper()
	requireNotEnqueued[T](tb, lister(tb, client, &tx), opts)
}

// ExpectedJob is one job RequireManyEnqueued expects: of Args' topic
// (only the topic of Args counts: check the arguments in the rows it
// returns), matching Opts (nil checks nothing more).
type ExpectedJob struct {
	Args sluice.JobArgs
	Opts *RequireOpts
}

// RequireManyEnqueued checks that the jobs of the topics named in expected
// are exactly the jobs expected, in the order they were enqueued, each
// matching its options, and returns them. Jobs of other topics are
// ignored. It fails the test, listing what it found, otherwise.
func RequireManyEnqueued[TTx any](tb testing.TB, client *sluice.Client[TTx], expected []ExpectedJob) []*sluice.JobRow {
	tb.Helper()
	return requireMany(tb, lister(tb, client, nil), expected)
}

// RequireManyEnqueuedTx is RequireManyEnqueued inside tx.
func RequireManyEnqueuedTx[TTx any](tb testing.TB, client *sluice.Client[TTx], tx TTx, expected []ExpectedJob) []*sluice.JobRow {
	tb.Helper()
	return requireMany(tb, lister(tb, client, &tx), expected)
}

// listFunc lists every job of the topics, oldest first; it fails the test
// and returns false if it cannot.
type listFunc func(topics []string) ([]*sluice.JobRow, bool)

// lister returns the listFunc of client, inside *tx when tx is not nil.
func lister[TTx any](tb testing.TB, client *sluice.Client[TTx], tx *TTx) listFunc {
	return func(topics []string) ([]*sluice.JobRow, bool) {
		tb.Helper()
		f := &sluice.ListFilter{JobFilter: sluice.JobFilter{Topics: topics}, Limit: sluice.MaxListLimit}
		var jobs []*sluice.JobRow
		for {
			var res *sluice.ListResult
			var err error
			if tx != nil {
				res, err = client.ListTx(tb.Context(), *tx, f)
			} else {
				res, err = client.List(tb.Context(), f)
			}
			if err != nil {
				tb.Fatalf("sluicetest: %v", err)
				return nil, false
			}
			for _, j := range res.Jobs {
				// Encrypted payloads are checked, and decoded, in clear.
				if _, sealed := sluice.PayloadKeyID(j); sealed {
					if j.Payload, err = client.DecryptPayload(j); err != nil {
						tb.Fatalf("sluicetest: %v", err)
						return nil, false
					}
				}
			}
			jobs = append(jobs, res.Jobs...)
			if res.NextCursor == "" {
				return jobs, true
			}
			f.Cursor = res.NextCursor
		}
	}
}

func requireEnqueued[T sluice.JobArgs](tb testing.TB, list listFunc, opts *RequireOpts) *sluice.Job[T] {
	tb.Helper()
	var zero T
	topic := zero.Topic()
	jobs, ok := list([]string{topic})
	if !ok {
		return nil
	}
	var matched []*sluice.JobRow
	var report []string
	for _, j := range jobs {
		if diff := opts.mismatches(j); len(diff) > 0 {
			report = append(report, fmt.Sprintf("  job %s: %s", j.ID, strings.Join(diff, "; ")))
			continue
		}
		matched = append(matched, j)
	}
	switch {
	case len(jobs) == 0:
		tb.Fatalf("sluicetest: no job of topic %q was enqueued", topic)
		return nil
	case len(matched) == 0:
		tb.Fatalf("sluicetest: none of the %d jobs of topic %q matches:\n%s", len(jobs), topic, strings.Join(report, "\n"))
		return nil
	case len(matched) > 1:
		tb.Fatalf("sluicetest: %d jobs of topic %q match, want exactly one (RequireManyEnqueued checks several): %s",
			len(matched), topic, strings.Join(ids(matched), ", "))
		return nil
	}
	job := &sluice.Job[T]{JobRow: matched[0]}
	if err := json.Unmarshal(matched[0].Payload, &job.Args); err != nil {
		tb.Fatalf("sluicetest: job %s: payload does not decode into %T: %v", matched[0].ID, job.Args, err)
		return nil
	}
	return job
}

func requireNotEnqueued[T sluice.JobArgs](tb testing.TB, list listFunc, opts *RequireOpts) {
	tb.Helper()
	var zero T
	topic := zero.Topic()
	jobs, ok := list([]string{topic})
	if !ok {
		return
	}
	var matched []*sluice.JobRow
	for _, j := range jobs {
		if len(opts.mismatches(j)) == 0 {
			matched = append(matched, j)
		}
	}
	if len(matched) > 0 {
		tb.Fatalf("sluicetest: want no job of topic %q%s, found %d: %s", topic, opts.describe(), len(matched),
			strings.Join(ids(matched), ", "))
	}
}

func requireMany(tb testing.TB, list listFunc, expected []ExpectedJob) []*sluice.JobRow {
	tb.Helper()
	var topics []string
	for i, e := range expected {
		if e.Args == nil {
			tb.Fatalf("sluicetest: expected[%d].Args is nil", i)
			return nil
		}
		if !slices.Contains(topics, e.Args.Topic()) {
			topics = append(topics, e.Args.Topic())
		}
	}
	jobs, ok := list(topics)
	if !ok {
		return nil
	}
	var problems []string
	if len(jobs) != len(expected) {
		problems = append(problems, fmt.Sprintf("  want %d jobs of topics %q, found %d", len(expected), topics, len(jobs)))
	}
	for i := range max(len(jobs), len(expected)) {
		switch {
		case i >= len(jobs):
			problems = append(problems, fmt.Sprintf("  [%d] want a job of topic %q, found none", i, expected[i].Args.Topic()))
		case i >= len(expected):
			problems = append(problems, fmt.Sprintf("  [%d] job %s of topic %q not expected", i, jobs[i].ID, jobs[i].Topic))
		case jobs[i].Topic != expected[i].Args.Topic():
			problems = append(problems, fmt.Sprintf("  [%d] job %s is of topic %q, want %q", i, jobs[i].ID, jobs[i].Topic, expected[i].Args.Topic()))
		default:
			if diff := expected[i].Opts.mismatches(jobs[i]); len(diff) > 0 {
				problems = append(problems, fmt.Sprintf("  [%d] job %s: %s", i, jobs[i].ID, strings.Join(diff, "; ")))
			}
		}
	}
	if len(problems) > 0 {
		tb.Fatalf("sluicetest: the jobs enqueued are not those expected:\n%s", strings.Join(problems, "\n"))
		return nil
	}
	return jobs
}

// mismatches says how job differs from o; nothing when it matches (or o is
// nil).
func (o *RequireOpts) mismatches(job *sluice.JobRow) []string {
	if o == nil {
		return nil
	}
	var diff []string
	add := func(field string, got, want any) {
		diff = append(diff, fmt.Sprintf("%s is %v, want %v", field, got, want))
	}
	if o.Queue != "" && job.Queue != o.Queue {
		add("queue", fmt.Sprintf("%q", job.Queue), fmt.Sprintf("%q", o.Queue))
	}
	if o.Priority != nil && job.Priority != *o.Priority {
		add("priority", job.Priority, *o.Priority)
	}
	if !o.RunAt.IsZero() && !job.RunAt.Equal(o.RunAt.Truncate(time.Microsecond)) {
		add("run_at", job.RunAt.Format(time.RFC3339Nano), o.RunAt.UTC().Format(time.RFC3339Nano))
	}
	if o.Status != "" && job.Status != o.Status {
		add("status", job.Status, o.Status)
	}
	if o.MaxRetries != nil && job.MaxRetries != *o.MaxRetries {
		add("max_retries", job.MaxRetries, *o.MaxRetries)
	}
	if o.UniqueKey != "" && job.UniqueKey != o.UniqueKey {
		add("unique_key", fmt.Sprintf("%q", job.UniqueKey), fmt.Sprintf("%q", o.UniqueKey))
	}
	for _, tag := range o.Tags {
		if !slices.Contains(job.Tags, tag) {
			add("tags", fmt.Sprintf("%q", job.Tags), fmt.Sprintf("to include %q", tag))
		}
	}
	if len(o.Metadata) > 0 {
		diff = append(diff, metadataMismatches(job.Metadata, o.Metadata)...)
	}
	return diff
}

// metadataMismatches compares the keys of want with the job's metadata.
func metadataMismatches(raw json.RawMessage, want map[string]any) []string {
	var got map[string]json.RawMessage
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &got); err != nil {
			return []string{fmt.Sprintf("metadata %s is not a JSON object", raw)}
		}
	}
	var diff []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		w, err := json.Marshal(want[k])
		if err != nil {
			diff = append(diff, fmt.Sprintf("metadata[%q]: the value wanted does not encode: %v", k, err))
			continue
		}
		g, ok := got[k]
		if !ok {
			diff = append(diff, fmt.Sprintf("metadata has no key %q, want %s", k, w))
			continue
		}
		if !jsonEqual(g, w) {
			diff = append(diff, fmt.Sprintf("metadata[%q] is %s, want %s", k, g, w))
		}
	}
	return diff
}

// jsonEqual reports whether a and b encode the same value.
func jsonEqual(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return bytes.Equal(a, b)
	}
	ca, _ := json.Marshal(va)
	cb, _ := json.Marshal(vb)
	return bytes.Equal(ca, cb)
}

// describe says what o checks, for messages; empty for nil.
func (o *RequireOpts) describe() string {
	if o == nil {
		return ""
	}
	var set []string
	add := func(field string, v any) { set = append(set, fmt.Sprintf("%s %v", field, v)) }
	if o.Queue != "" {
		add("queue", fmt.Sprintf("%q", o.Queue))
	}
	if o.Priority != nil {
		add("priority", *o.Priority)
	}
	if !o.RunAt.IsZero() {
		add("run_at", o.RunAt.UTC().Format(time.RFC3339Nano))
	}
	if o.Status != "" {
		add("status", o.Status)
	}
	if o.MaxRetries != nil {
		add("max_retries", *o.MaxRetries)
	}
	if o.UniqueKey != "" {
		add("unique_key", fmt.Sprintf("%q", o.UniqueKey))
	}
	if len(o.Tags) > 0 {
		add("tags", fmt.Sprintf("%q", o.Tags))
	}
	if len(o.Metadata) > 0 {
		b, _ := json.Marshal(o.Metadata)
		add("metadata", string(b))
	}
	if len(set) == 0 {
		return ""
	}
	return " with " + strings.Join(set, ", ")
}

func ids(jobs []*sluice.JobRow) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}
