package main

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice"
)

// listValue is a flag that may be given several times, each time with one
// value or several separated by commas.
type listValue []string

func (l *listValue) String() string { return strings.Join(*l, ",") }

func (l *listValue) Set(s string) error {
	for v := range strings.SplitSeq(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}

// pairsValue is a flag of key=value pairs, given once per pair.
type pairsValue map[string]string

func (p pairsValue) String() string { return fmt.Sprint(map[string]string(p)) }

func (p pairsValue) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: want key=value", s)
	}
	p[k] = v
	return nil
}

// timeValue is a flag of a point in time: RFC 3339 (2026-01-02T15:04:05Z),
// a date (2026-01-02, UTC midnight), or a duration from now (-1h is an hour
// ago, 30m or +30m half an hour from now).
type timeValue struct {
	t   *time.Time
	now func() time.Time
}

func (v timeValue) String() string {
	if v.t == nil || v.t.IsZero() {
		return ""
	}
	return v.t.Format(time.RFC3339)
}

func (v timeValue) Set(s string) error {
	t, err := parseWhen(s, v.now())
	if err != nil {
		return err
	}
	*v.t = t
	return nil
}

// parseWhen parses a timeValue's text.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(d), nil
	}
	return time.Time{}, fmt.Errorf("%q: want RFC 3339 (2026-01-02T15:04:05Z), a date (2026-01-02) or a duration from now (-1h, 30m)", s)
}

// filterFlags are the flags that select jobs, as sluice.JobFilter does.
type filterFlags struct {
	statuses, topics, queues, tags, keys, groups listValue
	anyTag                                       bool
	uniqueKey                                    string
	metadata, payload                            pairsValue
	f                                            sluice.JobFilter
}

// addFilterFlags registers the job filter's flags on fs; topicsAndQueues
// limits them to --topic and --queue (for stats).
func addFilterFlags(fs *flag.FlagSet, topicsAndQueues bool) *filterFlags {
	ff := &filterFlags{metadata: pairsValue{}, payload: pairsValue{}}
	fs.Var(&ff.topics, "topic", "only jobs of these topics (repeat, or separate with commas)")
	fs.Var(&ff.queues, "queue", "only jobs in these queues")
	if topicsAndQueues {
		return ff
	}
	now := time.Now
	fs.Var(&ff.statuses, "status", "only jobs of these statuses: pending, processing, completed, failed, cancelled")
	fs.Var(&ff.tags, "tag", "only jobs carrying every one of these tags")
	fs.BoolVar(&ff.anyTag, "any-tag", false, "with --tag: jobs carrying at least one of the tags")
	fs.StringVar(&ff.uniqueKey, "unique-key", "", "only jobs with this unique key")
	fs.Var(&ff.keys, "key", "only jobs with one of these keys (repeat, or separate with commas)")
	fs.Var(&ff.groups, "group", "only the tasks and jobs of these workflows and batches, by ID (repeat, or separate with commas)")
	fs.Var(ff.metadata, "meta", "only jobs whose metadata has key=value, a string (repeat for several keys)")
	fs.Var(ff.payload, "payload", "only jobs whose payload has path=value: keys joined by dots (customer.id=42); "+
		"the value a JSON string, number, true, false or null, or else text (repeat for several paths)")
	fs.Var(timeValue{&ff.f.CreatedFrom, now}, "created-from", "only jobs enqueued at or after this time (RFC 3339, a date, or -1h for an hour ago)")
	fs.Var(timeValue{&ff.f.CreatedBefore, now}, "created-before", "only jobs enqueued before this time")
	fs.Var(timeValue{&ff.f.RunAtFrom, now}, "run-at-from", "only jobs due at or after this time")
	fs.Var(timeValue{&ff.f.RunAtBefore, now}, "run-at-before", "only jobs due before this time")
	return ff
}

// filter returns the JobFilter the flags give.
func (ff *filterFlags) filter() sluice.JobFilter {
	f := ff.f
	for _, s := range ff.statuses {
		f.Statuses = append(f.Statuses, sluice.JobStatus(s))
	}
	f.Topics, f.Queues, f.Tags, f.AnyTag, f.UniqueKey, f.Keys = ff.topics, ff.queues, ff.tags, ff.anyTag, ff.uniqueKey, ff.keys
	f.GroupIDs = ff.groups
	if len(ff.metadata) > 0 {
		f.Metadata = ff.metadata
	}
	for path, v := range ff.payload {
		if f.Payload == nil {
			f.Payload = map[string]any{}
		}
		f.Payload[path] = sluice.PayloadValue(v)
	}
	return f
}

// empty reports whether no filter flag was given.
func (ff *filterFlags) empty() bool {
	f := ff.filter()
	return f.IsZero()
}
