package keyplan

import (
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// Scope is the stored row of one scope (a queue or a topic) as a claim
// reads it under the row's lock.
type Scope struct {
	Kind string // "queue" or "topic"
	Name string
	// MaxRunning, RateLimit and RatePeriod limit the whole scope (a
	// topic's), with the rate's window.
	MaxRunning, RateLimit int
	RatePeriod            time.Duration
	Window                Window
	// KeyMaxRunning, KeyRateLimit and KeyRatePeriod are each key's
	// defaults.
	KeyMaxRunning, KeyRateLimit int
	KeyRatePeriod               time.Duration
	// Overrides is how many keys of the scope have limits or a weight of
	// their own.
	Overrides int
	Fair      bool
	Cursor    *string
}

// limited reports whether the scope limits its keys or its whole, so
// that a claim must read the keys' running jobs and rows.
func (sc *Scope) limited() bool {
	return sc.MaxRunning > 0 || sc.RateLimit > 0 || sc.KeyMaxRunning > 0 || sc.KeyRateLimit > 0 || sc.Overrides > 0
}

// KeyRow is the stored row of one key of a scope: its own limits (zero
// for the scope's default), weight and rate window.
type KeyRow struct {
	Kind, Name, Key       string
	MaxRunning, RateLimit int
	RatePeriod            time.Duration
	Weight                int
	Window                Window
}

// Window is a rate window as stored: when it started (zero for never) and
// how many claims it counted.
type Window struct {
	Start time.Time
	Count int
}

// left returns how many more claims the window of a rate of limit per
// period allows at now: all of them once the window has ended.
func (w Window) left(limit int, period time.Duration, now time.Time) int {
	if w.Start.IsZero() || !w.Start.Add(period).After(now) {
		return limit
	}
	return max(0, limit-w.Count)
}

// after returns the window once n more claims are counted at now: a new
// one starting at now when the last has ended.
func (w Window) after(n int, period time.Duration, now time.Time) Window {
	if w.Start.IsZero() || !w.Start.Add(period).After(now) {
		return Window{Start: now, Count: n}
	}
	return Window{Start: w.Start, Count: w.Count + n}
}

// Running is how many jobs of one key, queue and topic are processing.
type Running struct {
	Key, Queue, Topic string
	N                 int
}

// State is what a keyed claim of one queue read under its locks.
type State struct {
	Queue string
	Now   time.Time
	// Scopes are the rows of the queue's scope and of its topics' that
	// exist.
	Scopes []Scope
	// Keys are the rows of the candidates' keys in those scopes.
	Keys []KeyRow
	// Running counts the processing jobs of the candidates' keys.
	Running []Running
	// TopicRunning counts the processing jobs of each topic whose whole
	// is limited.
	TopicRunning map[string]int
}

// Bucket names the limit a job counts against: the whole of a topic (key
// empty), or a key in a queue or a topic. Names and keys follow the text
// rule, so the NUL separator cannot be part of them.
func Bucket(kind, name, key string) string { return kind + "\x00" + name + "\x00" + key }

// SplitBucket returns the kind, name and key of a bucket.
func SplitBucket(b string) (kind, name, key string) {
	kind, rest, _ := strings.Cut(b, "\x00")
	name, key, _ = strings.Cut(rest, "\x00")
	return kind, name, key
}

// Rates holds the rate of every bucket that has one, so that a claim can
// count what it took in each window.
type Rates struct {
	now     time.Time
	periods map[string]time.Duration
	windows map[string]Window
}

// Input returns the input of Plan for candidates jobs and the limit of
// the claim, and the rates whose windows the claim must count in.
func (s *State) Input(jobs []Job, limit int) (Input, *Rates) {
	scopes := make(map[string]*Scope, len(s.Scopes))
	for i := range s.Scopes {
		sc := &s.Scopes[i]
		scopes[sc.Kind+"\x00"+sc.Name] = sc
	}
	keyRows := make(map[string]*KeyRow, len(s.Keys))
	for i := range s.Keys {
		k := &s.Keys[i]
		keyRows[Bucket(k.Kind, k.Name, k.Key)] = k
	}
	running := make(map[string]int)
	for _, r := range s.Running {
		running[Bucket("queue", r.Queue, r.Key)] += r.N
		running[Bucket("topic", r.Topic, r.Key)] += r.N
	}
	rates := &Rates{now: s.Now, periods: map[string]time.Duration{}, windows: map[string]Window{}}
	room := make(map[string]int)
	limit1 := func(b string, maxRunning, running, rateLimit int, period time.Duration, w Window) {
		if maxRunning > 0 {
			room[b] = max(0, maxRunning-running)
		}
		if rateLimit > 0 {
			left := w.left(rateLimit, period, s.Now)
			if n, ok := room[b]; !ok || left < n {
				room[b] = left
			}
			rates.periods[b], rates.windows[b] = period, w
		}
	}
	queueScope := scopes["queue\x00"+s.Queue]
	buckets := func(j Job) []string {
		var out []string
		if sc := scopes["topic\x00"+j.Topic]; sc != nil {
			if sc.MaxRunning > 0 || sc.RateLimit > 0 {
				out = append(out, Bucket("topic", j.Topic, ""))
			}
			if j.Key != "" && keyLimited(sc, keyRows[Bucket("topic", j.Topic, j.Key)]) {
				out = append(out, Bucket("topic", j.Topic, j.Key))
			}
		}
		if queueScope != nil && j.Key != "" && keyLimited(queueScope, keyRows[Bucket("queue", s.Queue, j.Key)]) {
			out = append(out, Bucket("queue", s.Queue, j.Key))
		}
		return out
	}
	seen := make(map[string]bool)
	for _, j := range jobs {
		for _, b := range buckets(j) {
			if seen[b] {
				continue
			}
			seen[b] = true
			kind, name, key := SplitBucket(b)
			sc := scopes[kind+"\x00"+name]
			if key == "" {
				limit1(b, sc.MaxRunning, s.TopicRunning[name], sc.RateLimit, sc.RatePeriod, sc.Window)
				continue
			}
			maxRunning, rateLimit, period, w := sc.KeyMaxRunning, sc.KeyRateLimit, sc.KeyRatePeriod, Window{}
			if kr := keyRows[b]; kr != nil {
				w = kr.Window
				if kr.MaxRunning > 0 {
					maxRunning = kr.MaxRunning
				}
				if kr.RateLimit > 0 {
					rateLimit, period = kr.RateLimit, kr.RatePeriod
				}
			}
			limit1(b, maxRunning, running[b], rateLimit, period, w)
		}
	}
	in := Input{Jobs: jobs, Limit: limit, Buckets: buckets, Room: room}
	if queueScope != nil && queueScope.Fair {
		in.Fair, in.Cursor = true, queueScope.Cursor
		in.Weight = func(key string) int {
			if kr := keyRows[Bucket("queue", s.Queue, key)]; kr != nil && kr.Weight > 0 {
				return kr.Weight
			}
			return 1
		}
	}
	return in, rates
}

// keyLimited reports whether a key with row kr (nil for none) has a limit
// in scope sc.
func keyLimited(sc *Scope, kr *KeyRow) bool {
	return sc.KeyMaxRunning > 0 || sc.KeyRateLimit > 0 || (kr != nil && (kr.MaxRunning > 0 || kr.RateLimit > 0))
}

// Counted returns the windows a claim leaves once it has taken what taken
// counts in each bucket: one for each bucket with a rate.
func (r *Rates) Counted(taken map[string]int) map[string]Window {
	out := make(map[string]Window)
	for b, n := range taken {
		if period, ok := r.periods[b]; ok && n > 0 {
			out[b] = r.windows[b].after(n, period, r.now)
		}
	}
	return out
}

// Count returns how many of jobs, claimed, count against each bucket.
func Count(jobs []*driver.JobRow, buckets func(Job) []string) map[string]int {
	taken := make(map[string]int)
	for _, j := range jobs {
		for _, b := range buckets(Job{ID: j.ID, Key: j.Key, Topic: j.Topic}) {
			taken[b]++
		}
	}
	return taken
}

// Row is one stored row of the table of limits, as both drivers read it:
// a scope's (Key empty) or a key's.
type Row struct {
	Kind, Name, Key             string
	MaxRunning, RateLimit       int
	RatePeriod                  time.Duration
	KeyMaxRunning, KeyRateLimit int
	KeyRatePeriod               time.Duration
	Sequence                    string
	Fair                        bool
	Weight, Overrides           int
	Cursor                      *string
	Window                      Window
	UpdatedAt                   time.Time
}

// Scope returns a scope's row as a claim reads it.
func (r *Row) Scope() Scope {
	return Scope{Kind: r.Kind, Name: r.Name, MaxRunning: r.MaxRunning, RateLimit: r.RateLimit, RatePeriod: r.RatePeriod,
		Window: r.Window, KeyMaxRunning: r.KeyMaxRunning, KeyRateLimit: r.KeyRateLimit, KeyRatePeriod: r.KeyRatePeriod,
		Overrides: r.Overrides, Fair: r.Fair, Cursor: r.Cursor}
}

// KeyRow returns a key's row as a claim reads it.
func (r *Row) KeyRow() KeyRow {
	return KeyRow{Kind: r.Kind, Name: r.Name, Key: r.Key, MaxRunning: r.MaxRunning, RateLimit: r.RateLimit,
		RatePeriod: r.RatePeriod, Weight: r.Weight, Window: r.Window}
}

// Assemble returns the limits of the scopes in rows, which come sorted by
// kind, name and key, each scope with its keys; the rows of keys that only
// count a window are left out.
func Assemble(rows []Row) []*driver.Limits {
	out := []*driver.Limits{}
	var last *driver.Limits
	for _, r := range rows {
		scope := driver.Scope{Kind: driver.ScopeKind(r.Kind), Name: r.Name}
		if r.Key == "" {
			last = &driver.Limits{Scope: scope, MaxRunning: r.MaxRunning, RateLimit: r.RateLimit,
				RatePeriod: r.RatePeriod, KeyMaxRunning: r.KeyMaxRunning, KeyRateLimit: r.KeyRateLimit,
				KeyRatePeriod: r.KeyRatePeriod, Sequence: driver.SequencePolicy(r.Sequence), Fair: r.Fair,
				UpdatedAt: r.UpdatedAt.UTC()}
			out = append(out, last)
			continue
		}
		if last == nil || last.Scope != scope || r.MaxRunning == 0 && r.RateLimit == 0 && r.Weight == 0 {
			continue // a key of a scope without limits, or one that only counts a window
		}
		last.Keys = append(last.Keys, driver.KeyLimit{Key: r.Key, MaxRunning: r.MaxRunning,
			RateLimit: r.RateLimit, RatePeriod: r.RatePeriod, Weight: r.Weight})
	}
	return out
}

// HeadJob is a job of the head of a queue in claim order, with whether its
// sequence leaves it free to run.
type HeadJob struct {
	Job
	Free bool
}

// Reads are how a driver reads what a keyed claim chooses from.
type Reads struct {
	// Head reads the first n due jobs of the queue in claim order.
	Head func(n int) ([]HeadJob, error)
	// Walk reads, for up to n keys of the queue's pending jobs after
	// from, each key's first due jobs in no sequence (at most n) and its
	// sequence's next job if that one is due, passing them to add; it
	// returns how many keys it walked and the last ("" for none).
	Walk func(from string, n int, add func(Job)) (int, string, error)
	// State reads into the State what the limits of keys need: the
	// processing jobs and the rows of keys (each asked for once), and,
	// when first, the processing jobs of the topics whose whole is
	// limited. It is called only when a scope limits keys or a topic.
	State func(keys []string, first bool) error
}

// HeadRows is how many jobs in claim order a keyed claim of limit jobs
// reads before it walks keys.
func HeadRows(limit int) int { return 2*limit + 16 }

// Choice is what a keyed claim chose, and what it needs to count it.
type Choice struct {
	Output
	// Buckets and Rates are those of the plan's input.
	Buckets func(Job) []string
	Rates   *Rates
	// Cursor is the cursor to store, nil to leave it: a fair claim's last
	// key served; a claim in claim order that walked keys, the last key
	// walked, so that the next walk goes on from there.
	Cursor *string
}

// Choose reads through reads, and chooses, the jobs a keyed claim of up to
// limit jobs takes of the queue whose scopes st holds. It reads the head
// of the queue in claim order and chooses from it; when that does not fill
// the claim though more jobs are due, or when the queue is fair (a fair
// claim takes from the head the jobs without a key only, the keyed ones by
// key), it walks keys from the queue's cursor and chooses again from
// all. The running jobs and rows of keys are read only when a scope limits
// keys or a topic, once per key.
func (st *State) Choose(limit int, reads Reads) (*Choice, error) {
	var queueScope *Scope
	limited := false
	for i := range st.Scopes {
		sc := &st.Scopes[i]
		if sc.Kind == string(driver.ScopeQueue) {
			queueScope = sc
		}
		limited = limited || sc.limited()
	}
	fair := queueScope != nil && queueScope.Fair
	head := HeadRows(limit)
	rows, err := reads.Head(head)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool)
	var jobs, fresh []Job
	add := func(j Job) {
		if !seen[j.ID] {
			seen[j.ID] = true
			jobs, fresh = append(jobs, j), append(fresh, j)
		}
	}
	for _, j := range rows {
		if j.Free && (!fair || j.Key == "") {
			add(j.Job)
		}
	}
	readKeys := make(map[string]bool)
	first := true
	choose := func() (Choice, error) {
		if limited {
			var keys []string
			for _, j := range fresh {
				if j.Key != "" && !readKeys[j.Key] {
					readKeys[j.Key] = true
					keys = append(keys, j.Key)
				}
			}
			if err := reads.State(keys, first); err != nil {
				return Choice{}, err
			}
			first, fresh = false, nil
		}
		in, rates := st.Input(jobs, limit)
		return Choice{Output: Plan(in), Buckets: in.Buckets, Rates: rates}, nil
	}
	c, err := choose()
	if err != nil || !fair && (len(c.IDs) == limit || len(rows) < head) {
		return &c, err // filled from the head, or every due job was read
	}
	from := ""
	if queueScope != nil && queueScope.Cursor != nil {
		from = *queueScope.Cursor
	}
	walked, last, err := reads.Walk(from, limit, add)
	if err != nil {
		return nil, err
	}
	if walked < limit && from != "" {
		// The walk reached the last key: go on from the first.
		if _, last, err = reads.Walk("", limit-walked, add); err != nil {
			return nil, err
		}
	}
	if c, err = choose(); err != nil {
		return nil, err
	}
	c.Cursor = &last
	if fair {
		c.Cursor = c.Output.Cursor
	}
	return &c, nil
}

// The SQL both drivers use for sequences, {t} standing for the jobs
// table.
const (
	// SeqHoldersSQL selects, as s, the jobs of the sequence of the job c
	// (its queue and key) that hold the jobs after them: pending or
	// processing, or failed under the policy 'hold'. Its terms include
	// the predicate of the sequence index (migration "keys"), so that a
	// lookup walks it.
	SeqHoldersSQL = `s.queue = c.queue AND s.key = c.key AND ` + SeqHoldingSQL

	// SeqHoldingSQL is the part of SeqHoldersSQL about s alone: with
	// conditions on s.queue and s.key of its own, a statement asks for the
	// jobs that hold one sequence, and a planner walks the sequence index
	// on both.
	SeqHoldingSQL = `s.sequence IS NOT NULL
	AND s.status IN ('pending', 'processing', 'failed') AND (s.status <> 'failed' OR s.sequence = 'hold')`

	// SeqFreeSQL is true for a job c that its sequence does not hold: one
	// in no sequence, or one that no job of its sequence with a smaller
	// ID holds.
	SeqFreeSQL = `(c.sequence IS NULL OR NOT EXISTS (SELECT 1 FROM {t} AS s WHERE ` + SeqHoldersSQL + ` AND s.id < c.id))`

	// LimitsColumns are the columns of a row of the table of limits, as
	// both drivers scan them into a Row.
	LimitsColumns = `scope, name, key, coalesce(max_running, 0), coalesce(rate_limit, 0), coalesce(rate_period, 0),
	coalesce(key_max_running, 0), coalesce(key_rate_limit, 0), coalesce(key_rate_period, 0), coalesce(sequence, ''),
	fair, coalesce(weight, 0), overrides, cursor, window_start, window_count, updated_at`
)

// AfterSet returns the limits of l's scope as stored by a set at now: read
// back through list when l sets any, else none but the time.
func AfterSet(l *driver.Limits, now time.Time, list func() ([]*driver.Limits, error)) (*driver.Limits, error) {
	if !l.Keyed() {
		return &driver.Limits{Scope: l.Scope, UpdatedAt: now.UTC()}, nil
	}
	all, err := list()
	if err != nil {
		return nil, err
	}
	for _, got := range all {
		if got.Scope == l.Scope {
			return got, nil
		}
	}
	return nil, fmt.Errorf("limits set: the limits of %s %q stored are gone", l.Scope.Kind, l.Scope.Name)
}
