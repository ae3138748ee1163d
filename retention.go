package sluice

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// Defaults of Retention, from the original design.
const (
	// DefaultKeepCompleted is how long completed jobs are kept.
	DefaultKeepCompleted = 24 * time.Hour
	// DefaultKeepFailed is how long failed and cancelled jobs are kept.
	DefaultKeepFailed = 7 * 24 * time.Hour
	// DefaultCleanInterval is how often a started client deletes expired
	// jobs.
	DefaultCleanInterval = time.Minute
)

// KeepForever, as a Retention or Keep field, keeps jobs of that status
// for good.
const KeepForever time.Duration = -1

// KeepNone, as a Retention or Keep field, keeps no job of that status: a
// job whose worker's outcome gives it that status is deleted in the
// transaction that records the outcome (the client's own, or the one
// Ack and Nack are given), and one that gets there otherwise (cancelled
// by an operator, failed by the rescuer) at the cleaner's next pass.
const KeepNone time.Duration = -2

// Retention is how long finished jobs are kept, counted from when they
// finished, before a started client deletes them. A zero field means its
// default; KeepForever keeps jobs of that status for good, KeepNone
// deletes them as they finish. Topics and Queues override it for the jobs
// of a topic or a queue. Every started client cleans, and any number may
// run at once: each deletes different jobs, in small batches.
type Retention struct {
	// Completed is how long completed jobs are kept. Default 24 hours.
	Completed time.Duration
	// Failed is how long failed jobs (the dead letter) are kept. Default
	// 7 days.
	Failed time.Duration
	// Cancelled is how long cancelled jobs are kept. Default 7 days.
	Cancelled time.Duration
	// Interval is how often the client deletes expired jobs (at least
	// 1 ms). Default 1 minute.
	Interval time.Duration
	// Topics are the retentions of the jobs of some topics, by topic: a
	// field a topic's Keep sets wins over its queue's and over the fields
	// above. Default none.
	Topics map[string]Keep
	// Queues are the retentions of the jobs of some queues, by queue: a
	// field a queue's Keep sets wins over the fields above, for the jobs
	// of topics whose own Keep leaves it zero. Default none.
	Queues map[string]Keep
}

// Keep is how long the finished jobs of one topic or queue are kept
// (see Retention.Topics and Retention.Queues), counted from when they
// finished. A zero field leaves that status to the next rule: the
// queue's Keep for a topic's, then the Retention's own field.
// KeepForever keeps the jobs for good, KeepNone deletes them as they
// finish.
type Keep struct {
	// Completed is how long completed jobs are kept.
	Completed time.Duration
	// Failed is how long failed jobs are kept.
	Failed time.Duration
	// Cancelled is how long cancelled jobs are kept.
	Cancelled time.Duration
}

// of returns k's field for status: zero for a status that is not final.
func (k Keep) of(status JobStatus) time.Duration {
	switch status {
	case StatusCompleted:
		return k.Completed
	case StatusFailed:
		return k.Failed
	case StatusCancelled:
		return k.Cancelled
	}
	return 0
}

// check returns a *ConfigError naming the first field of k, called field,
// that is neither positive nor zero nor KeepForever nor KeepNone.
func (k Keep) check(field string) error {
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"Completed", k.Completed}, {"Failed", k.Failed}, {"Cancelled", k.Cancelled}} {
		if f.v < 0 && f.v != KeepForever && f.v != KeepNone {
			return &ConfigError{Field: field + "." + f.name, Reason: "must not be negative, but for KeepForever or KeepNone"}
		}
	}
	return nil
}

// fill validates r and fills in its defaults.
func (r *Retention) fill() error {
	own := Keep{Completed: r.Completed, Failed: r.Failed, Cancelled: r.Cancelled}
	if err := own.check("Retention"); err != nil {
		return err
	}
	r.Completed = orDefault(r.Completed, DefaultKeepCompleted)
	r.Failed = orDefault(r.Failed, DefaultKeepFailed)
	r.Cancelled = orDefault(r.Cancelled, DefaultKeepFailed)
	if r.Interval < 0 || r.Interval > 0 && r.Interval < time.Millisecond {
		return &ConfigError{Field: "Retention.Interval", Reason: "must be at least 1ms"}
	}
	r.Interval = orDefault(r.Interval, DefaultCleanInterval)
	for topic, k := range r.Topics {
		field := fmt.Sprintf("Retention.Topics[%q]", topic)
		if topic == "" || driver.CheckText(topic) != nil {
			return &ConfigError{Field: field, Reason: "a topic is non-empty UTF-8 text without NUL"}
		}
		if err := k.check(field); err != nil {
			return err
		}
	}
	for queue, k := range r.Queues {
		field := fmt.Sprintf("Retention.Queues[%q]", queue)
		if !queueNameRE.MatchString(queue) {
			return &ConfigError{Field: field, Reason: "queue names are 1 to 128 letters, digits, or _ . : -"}
		}
		if err := k.check(field); err != nil {
			return err
		}
	}
	r.Topics, r.Queues = maps.Clone(r.Topics), maps.Clone(r.Queues)
	return nil
}

// keep returns how long the jobs of topic and queue that reach status
// are kept: the topic's rule, else the queue's, else the Retention's own.
func (r *Retention) keep(topic, queue string, status JobStatus) time.Duration {
	if d := r.Topics[topic].of(status); d != 0 {
		return d
	}
	if d := r.Queues[queue].of(status); d != 0 {
		return d
	}
	return Keep{Completed: r.Completed, Failed: r.Failed, Cancelled: r.Cancelled}.of(status)
}

// cleanFor returns the cleans of the jobs of status, one per retention
// that applies to some of them (KeepForever's left out), each with its
// retention (KeepNone as 0): the topics' rules, the queues' for the
// jobs of other topics, and the Retention's own for the rest. Topics
// and queues kept alike share a clean.
func (r *Retention) cleanFor(status JobStatus) []retentionClean {
	var cleans []retentionClean
	add := func(keep time.Duration, p driver.JobCleanParams) {
		switch keep {
		case KeepForever:
			return
		case KeepNone:
			keep = 0
		}
		cleans = append(cleans, retentionClean{keep: keep, params: p})
	}
	topics, byTopic := ruled(r.Topics, status)
	queues, byQueue := ruled(r.Queues, status)
	for _, keep := range slices.Sorted(maps.Keys(byTopic)) {
		add(keep, driver.JobCleanParams{Topics: byTopic[keep]})
	}
	for _, keep := range slices.Sorted(maps.Keys(byQueue)) {
		add(keep, driver.JobCleanParams{Queues: byQueue[keep], NotTopics: topics})
	}
	add(r.keep("", "", status), driver.JobCleanParams{NotTopics: topics, NotQueues: queues})
	return cleans
}

// retentionClean is one clean of a run of the cleaner: the jobs params
// selects, finished more than keep ago.
type retentionClean struct {
	keep   time.Duration
	params driver.JobCleanParams
}

// ruled returns, sorted, the names of rules whose Keep sets status, and
// those names grouped by the retention they set.
func ruled(rules map[string]Keep, status JobStatus) ([]string, map[time.Duration][]string) {
	var names []string
	by := map[time.Duration][]string{}
	for _, name := range slices.Sorted(maps.Keys(rules)) {
		if d := rules[name].of(status); d != 0 {
			names = append(names, name)
			by[d] = append(by[d], name)
		}
	}
	return names, by
}
