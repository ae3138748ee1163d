// Package filtersql writes the WHERE clause of a driver.JobFilter, the same
// for every driver but for how each binds lists and times.
package filtersql

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/driver"
)

// Dialect is how a driver writes a filter's parts.
type Dialect struct {
	// Mark starts a numbered placeholder: "$" for Postgres, "?" for SQLite.
	Mark string
	// In returns the condition that column col is one of vals, with ph the
	// placeholder of the one argument it binds, and that argument.
	In func(col, ph string, vals []string) (cond string, arg any)
	// UUIDIn is In for a column of UUIDs (vals are canonical UUIDs); nil
	// for a driver that stores them as text, where In serves.
	UUIDIn func(col, ph string, vals []string) (cond string, arg any)
	// Time returns t as the driver binds it.
	Time func(t time.Time) any
	// Tags returns the condition that a job carries every tag of tags
	// (distinct, not empty), or with any at least one, with ph the
	// placeholder of the one argument it binds, and that argument.
	Tags func(ph string, tags []string, any bool) (cond string, arg any)
	// MetaKey returns how the driver binds a metadata key, and Meta the
	// condition that the metadata's value at the key bound to keyPh is
	// the JSON string bound to valPh.
	MetaKey func(key string) any
	Meta    func(keyPh, valPh string) string
	// Payload returns the condition that the payload holds m's value at
	// m's path, binding its arguments with arg (which returns each one's
	// placeholder).
	Payload func(arg func(any) string, m driver.PayloadMatch) string
}

// Query is a WHERE clause being built, with its arguments.
type Query struct {
	d     *Dialect
	conds []string
	// Args are the arguments, in placeholder order.
	Args []any
}

// New returns the conditions selecting what f selects. Values that break
// the text rule never reach the statement (see driver.JobFilter.Matchable):
// a filter they leave unable to select anything becomes the one
// condition FALSE.
func New(d *Dialect, f *driver.JobFilter) *Query {
	q, f := matchable(d, f)
	if f == nil {
		return q
	}
	if len(f.Statuses) > 0 {
		q.In("status", statuses(f.Statuses))
		q.indexPredicates(f.Statuses)
	}
	q.In("topic", f.Topics)
	q.In("queue", f.Queues)
	q.In("key", f.Keys)
	if len(f.GroupIDs) > 0 {
		q.uuidIn("group_id", f.GroupIDs)
	}
	if len(f.IDs) > 0 {
		q.uuidIn("id", f.IDs)
	}
	if f.UniqueKey != "" {
		q.Add("unique_key = ", f.UniqueKey)
	}
	q.timeRange("created_at", f.CreatedFrom, f.CreatedBefore)
	q.runAtRange(f.RunAtFrom, f.RunAtBefore)
	if tags := distinct(f.Tags); len(tags) > 0 {
		ph := q.d.Mark + strconv.Itoa(len(q.Args)+1)
		cond, arg := q.d.Tags(ph, tags, f.AnyTag)
		q.Args = append(q.Args, arg)
		q.conds = append(q.conds, cond)
	}
	keys := make([]string, 0, len(f.Metadata))
	for k := range f.Metadata {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the same statement for the same filter
	for _, k := range keys {
		keyPh := q.Arg(q.d.MetaKey(k))
		q.conds = append(q.conds, q.d.Meta(keyPh, q.Arg(f.Metadata[k])))
	}
	for _, m := range f.Payload {
		q.conds = append(q.conds, q.d.Payload(q.Arg, m))
	}
	return q
}

// matchable returns an empty query and f made matchable, or the query
// selecting nothing and nil when f cannot match.
func matchable(d *Dialect, f *driver.JobFilter) (*Query, *driver.JobFilter) {
	q := &Query{d: d}
	g, ok := f.Matchable()
	if !ok {
		q.Cond("FALSE")
		return q, nil
	}
	return q, &g
}

// distinct returns tags without repeats, in their first order.
func distinct(tags []string) []string {
	if len(tags) < 2 {
		return tags
	}
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// The predicates of the drivers' partial indexes over finished jobs. A
// query must state a partial index's predicate word for word for SQLite's
// planner to use the index, and for Postgres's to use one whose predicate
// the query's statuses imply only through what finished means.
const (
	// FailedPredicate is the predicate of the index of failed and
	// cancelled jobs by ID.
	FailedPredicate = "status IN ('failed', 'cancelled')"
	// FinalizedPredicate is the predicate of the index of finished jobs
	// by status and finalization time.
	FinalizedPredicate = "finalized_at IS NOT NULL"
)

// indexPredicates adds the predicates of the partial indexes that hold
// every job of the statuses ss, which the selection implies, so that the
// planner may use those indexes.
func (q *Query) indexPredicates(ss []driver.JobStatus) {
	failed, finished := true, true
	for _, s := range ss {
		failed = failed && (s == driver.StatusFailed || s == driver.StatusCancelled)
		finished = finished && s.Finished()
	}
	if failed {
		q.Cond(FailedPredicate)
	}
	if finished {
		q.Cond(FinalizedPredicate)
	}
}

// Cond adds the condition cond as it is.
func (q *Query) Cond(cond string) {
	q.conds = append(q.conds, cond)
}

// Arg adds v to the arguments and returns its placeholder.
func (q *Query) Arg(v any) string {
	q.Args = append(q.Args, v)
	return q.d.Mark + strconv.Itoa(len(q.Args))
}

// Add adds the condition prefix followed by v's placeholder.
func (q *Query) Add(prefix string, v any) {
	q.conds = append(q.conds, prefix+q.Arg(v))
}

// AddTime adds the condition prefix followed by t's placeholder.
func (q *Query) AddTime(prefix string, t time.Time) {
	q.Add(prefix, q.d.Time(t))
}

// In adds the condition that column col is one of vals; nothing when vals
// is empty.
func (q *Query) In(col string, vals []string) {
	switch len(vals) {
	case 0:
		return
	case 1:
		// An equality lets the planner walk an index on (col, id) in ID
		// order, which a list does not.
		q.Add(col+" = ", vals[0])
		return
	}
	ph := q.d.Mark + strconv.Itoa(len(q.Args)+1)
	cond, arg := q.d.In(col, ph, vals)
	q.Args = append(q.Args, arg)
	q.conds = append(q.conds, cond)
}

// uuidIn adds the condition that col, a column of UUIDs, is one of ids;
// values that are not canonical UUIDs name nothing, and ids with none
// select nothing.
func (q *Query) uuidIn(col string, ids []string) {
	var kept []string
	for _, id := range ids {
		if u, err := uuid.Parse(id); err == nil && u.String() == id {
			kept = append(kept, id)
		}
	}
	switch {
	case len(kept) == 0:
		q.Cond("FALSE")
	case len(kept) == 1 || q.d.UUIDIn == nil:
		q.In(col, kept)
	default:
		ph := q.d.Mark + strconv.Itoa(len(q.Args)+1)
		cond, arg := q.d.UUIDIn(col, ph, kept)
		q.Args = append(q.Args, arg)
		q.conds = append(q.conds, cond)
	}
}

// NotIn adds the condition that column col is none of vals; nothing when
// none of vals follows the text rule (no stored text equals the others,
// which never reach the statement).
func (q *Query) NotIn(col string, vals []string) {
	kept, _ := driver.MatchableAmong(vals)
	if len(kept) == 0 {
		return
	}
	ph := q.d.Mark + strconv.Itoa(len(q.Args)+1)
	cond, arg := q.d.In(col, ph, kept)
	q.Args = append(q.Args, arg)
	q.conds = append(q.conds, "NOT ("+cond+")")
}

func (q *Query) timeRange(col string, from, before time.Time) {
	if !from.IsZero() {
		q.AddTime(col+" >= ", from)
	}
	if !before.IsZero() {
		q.AddTime(col+" < ", before)
	}
}

// runAtRange adds the conditions that a job's run time is from from on and
// before before, each when not zero. A job waiting for others keeps its run
// time in wait_run_at and a time past any bound in run_at
// (driver.WaitingRunAt), so that no claim takes it: the conditions compare
// both columns as they are, rather than an expression of them, which the
// planner has no statistics of.
func (q *Query) runAtRange(from, before time.Time) {
	if !from.IsZero() {
		ph := q.Arg(q.d.Time(from))
		q.conds = append(q.conds, "run_at >= "+ph+" AND (wait_run_at IS NULL OR wait_run_at >= "+ph+")")
	}
	if !before.IsZero() {
		ph := q.Arg(q.d.Time(before))
		q.conds = append(q.conds, "(run_at < "+ph+" OR wait_run_at < "+ph+")")
	}
}

// Where returns the clause, "WHERE ..." or empty when nothing is selected
// against.
func (q *Query) Where() string {
	if len(q.conds) == 0 {
		return ""
	}
	return "WHERE " + strings.Join(q.conds, " AND ")
}

// Clone returns a copy of q that can be extended without changing q.
func (q *Query) Clone() *Query {
	return &Query{d: q.d, conds: append([]string(nil), q.conds...), Args: append([]any(nil), q.Args...)}
}

// ListSuffix returns the ORDER BY, LIMIT and OFFSET of a list by ID, after
// adding the cursor condition to q.
func (q *Query) ListSuffix(p *driver.JobListParams, cursor any) string {
	dir, cmp := "ASC", " > "
	if p.Desc {
		dir, cmp = "DESC", " < "
	}
	if p.AfterID != "" {
		q.Add("id"+cmp, cursor)
	}
	limit := q.Arg(p.Limit)
	offset := q.Arg(p.Offset)
	return " ORDER BY id " + dir + " LIMIT " + limit + " OFFSET " + offset
}

// CountsBy returns the statement, and its arguments, that counts the jobs
// q selects by status, topic and queue. table is the jobs table as the
// driver names it.
func (q *Query) CountsBy(table string) (string, []any) {
	return "SELECT status, topic, queue, count(*) FROM " + table + " " + q.Where() +
		" GROUP BY status, topic, queue", q.Args
}

// Counted reports whether the jobs f selects can be counted from the
// counts a driver keeps by status, queue and topic: f selects by nothing
// else.
func Counted(f *driver.JobFilter) bool {
	return f.UniqueKey == "" && len(f.Keys) == 0 && len(f.GroupIDs) == 0 && len(f.IDs) == 0 && f.CreatedFrom.IsZero() && f.CreatedBefore.IsZero() &&
		f.RunAtFrom.IsZero() && f.RunAtBefore.IsZero() && len(f.Tags) == 0 && len(f.Metadata) == 0 && len(f.Payload) == 0
}

// Tally returns a statement, and its arguments, that reads from tables
// (each with the columns status, queue, topic and n) how many jobs f
// selects, one row (status, topic, queue, count) per combination that has
// any: the sum of n over every table, for tables that each hold part of
// the counts. f must be Counted. Values that break the text rule are
// left out as New leaves them out.
func Tally(d *Dialect, f *driver.JobFilter, tables ...string) (string, []any) {
	q, f := matchable(d, f)
	if f != nil {
		q.In("status", statuses(f.Statuses))
		q.In("topic", f.Topics)
		q.In("queue", f.Queues)
	}
	parts := make([]string, len(tables))
	for i, t := range tables {
		// Numbered placeholders: every part reads the same arguments.
		parts[i] = "SELECT status, topic, queue, n FROM " + t + " " + q.Where()
	}
	return "SELECT status, topic, queue, sum(n) FROM (" + strings.Join(parts, " UNION ALL ") +
		") AS c GROUP BY status, topic, queue HAVING sum(n) > 0", q.Args
}

func statuses(ss []driver.JobStatus) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}

// Clean returns the selection of the jobs p deletes (see
// driver.Executor.JobClean): of its status, finalized before p.Before,
// in its topics and queues and not in the others. The status and the
// time come first, as the index they walk has them.
func Clean(d *Dialect, p *driver.JobCleanParams) *Query {
	q, f := matchable(d, &driver.JobFilter{Topics: p.Topics, Queues: p.Queues})
	if f == nil {
		return q
	}
	q.Add("status = ", string(p.Status))
	q.AddTime("finalized_at < ", p.Before)
	q.In("topic", f.Topics)
	q.In("queue", f.Queues)
	q.NotIn("topic", p.NotTopics)
	q.NotIn("queue", p.NotQueues)
	return q
}
