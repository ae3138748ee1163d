// Package filtersql writes the WHERE clause of a driver.JobFilter, the same
// for every driver but for how each binds lists and times.
package filtersql

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// Dialect is how a driver writes a filter's parts.
type Dialect struct {
	// Mark starts a numbered placeholder: "$" for Postgres, "?" for SQLite.
	Mark string
	// In returns the condition that column col is one of vals, with ph the
	// placeholder of the one argument it binds, and that argument.
	In func(col, ph string, vals []string) (cond string, arg any)
	// Time returns t as the driver binds it.
	Time func(t time.Time) any
}

// Query is a WHERE clause being built, with its arguments.
type Query struct {
	d     *Dialect
	conds []string
	sql   string
	// Args are the arguments, in placeholder order.
	Args []any
}

// New returns the conditions selecting what f selects.
func New(d *Dialect, f *driver.JobFilter) *Query {
	q := &Query{d: d}
	if len(f.Statuses) > 0 {
		vals := make([]string, len(f.Statuses))
		for i, s := range f.Statuses {
			vals[i] = string(s)
		}
		q.In("status", vals)
		if !slices.Contains(f.Statuses, driver.StatusProcessing) {
			// Lets the planner use the status index, which leaves
			// processing jobs out.
			q.Cond(NotProcessing)
		}
	}
	q.In("topic", f.Topics)
	q.In("queue", f.Queues)
	if f.UniqueKey != "" {
		q.Add("unique_key = ", f.UniqueKey)
	}
	q.timeRange("created_at", f.CreatedFrom, f.CreatedBefore)
	q.timeRange("run_at", f.RunAtFrom, f.RunAtBefore)
	return q
}

// NotProcessing is the condition of the drivers' status index, which
// leaves processing jobs to the lease index: a query must state it, word for
// word, for the planner to use that index.
const NotProcessing = "status <> 'processing'"

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

func (q *Query) timeRange(col string, from, before time.Time) {
	if !from.IsZero() {
		q.AddTime(col+" >= ", from)
	}
	if !before.IsZero() {
		q.AddTime(col+" < ", before)
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

// CountsBy returns the two queries whose rows, together, count the jobs q
// selects by status, topic and queue: one over the status index, one over
// the processing jobs. table is the jobs table as the driver names it.
func (q *Query) CountsBy(table string) [2]*Query {
	var out [2]*Query
	for i, cond := range []string{NotProcessing, "status = 'processing'"} {
		c := q.Clone()
		c.Cond(cond)
		c.sql = "SELECT status, topic, queue, count(*) FROM " + table + " " + c.Where() +
			" GROUP BY status, queue, topic"
		out[i] = c
	}
	return out
}

// SQL returns the statement CountsBy made.
func (q *Query) SQL() string { return q.sql }
