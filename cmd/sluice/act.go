package main

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice"
)

// action is one of the verbs that change jobs.
type action struct {
	verb, done, summary string
	one                 func(jobs, context.Context, string) (*sluice.JobRow, error)
	many                func(jobs, context.Context, *sluice.JobFilter) ([]*sluice.JobRow, error)
}

var actions = []action{
	{"cancel", "cancelled", "cancel pending or running jobs", jobs.Cancel, jobs.CancelMany},
	{"requeue", "requeued", "run failed or cancelled jobs again", jobs.Requeue, jobs.RequeueMany},
	{"retry", "made due", "run pending jobs now instead of at their run_at", jobs.RetryNow, jobs.RetryNowMany},
	{"delete", "deleted", "delete jobs that are not running", jobs.Delete, jobs.DeleteMany},
}

func actCommands() []command {
	var cmds []command
	for _, a := range actions {
		cmds = append(cmds, command{name: a.verb, args: "ID... | filters", summary: a.summary,
			run: func(ctx context.Context, c *cli, args []string) error { return c.act(ctx, a, args) }})
	}
	return cmds
}

// actBatch is how many jobs a bulk action changes per statement, so that
// it can show its progress and no statement holds locks for long.
const actBatch = 1000

// actJSON is a bulk action's --json output.
type actJSON struct {
	Action string   `json:"action"`
	Count  int      `json:"count"`
	IDs    []string `json:"ids"`
}

// act runs a on the jobs named by ID, or on those the filter flags select.
func (c *cli) act(ctx context.Context, a action, args []string) error {
	fs := c.flags(a.verb, "ID... | filters")
	ff := addFilterFlags(fs, false)
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0 && !ff.empty():
		return usageErrorf("%s takes job IDs or filters, not both", a.verb)
	case len(pos) == 0 && ff.empty():
		return usageErrorf("%s wants job IDs or at least one filter (--status, --topic, --queue, …)", a.verb)
	}
	if err := checkIDs(pos); err != nil {
		return err
	}
	jc, done, err := c.client(ctx)
	if err != nil {
		return err
	}
	defer done()
	if len(pos) > 0 {
		return c.actOnIDs(ctx, jc, a, pos)
	}
	ids, err := c.actByFilter(ctx, jc, a, ff.filter())
	if err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.out(), actJSON{Action: a.verb, Count: len(ids), IDs: ids})
	}
	fmt.Fprintf(c.out(), "%s %s\n", a.done, count(len(ids), "job"))
	return nil
}

// actOnIDs runs a on each job named; it reports each failure and goes on.
func (c *cli) actOnIDs(ctx context.Context, jc *jobClient, a action, ids []string) error {
	var rows []*sluice.JobRow
	var firstErr error
	for _, id := range ids {
		row, err := a.one(jc.jobs, ctx, id)
		if err != nil {
			err = jobErr(id, err)
			fmt.Fprintf(c.stderr, "sluice: %v\n", err)
			firstErr = cmpErr(firstErr, err)
			continue
		}
		rows = append(rows, row)
		if !c.json {
			fmt.Fprintf(c.out(), "%s %s (%s, now %s)\n", a.done, row.ID, row.Topic, row.Status)
		}
	}
	if c.json {
		if err := writeJSON(c.out(), nonNil(rows)); err != nil {
			return err
		}
	}
	return quiet(firstErr)
}

// actByFilter runs a on the jobs f selects, actBatch at a time: each batch
// is the jobs f selects that were created in one span of time, the spans
// following each other, so every job f selects is acted on once. Jobs
// enqueued into a span already done while the action runs are left alone.
// It returns the IDs of the jobs changed, the rows themselves let go batch
// by batch: an action on millions of jobs keeps their IDs alone.
func (c *cli) actByFilter(ctx context.Context, jc *jobClient, a action, f sluice.JobFilter) ([]string, error) {
	page, err := jc.List(ctx, &sluice.ListFilter{JobFilter: f, Limit: actBatch})
	if err != nil {
		return nil, err
	}
	p := &progress{w: c.stderr, enabled: c.tty && page.Total > actBatch, verb: a.verb, total: page.Total}
	defer p.end()
	all := []string{}
	from := f.CreatedFrom
	for {
		span := f
		span.CreatedFrom = from
		if page.NextCursor != "" {
			// Up to the last listed job's microsecond, inclusive: the next
			// span starts where this one ends. Spans never go back in time,
			// even where IDs do not sort by creation time.
			span.CreatedBefore = page.Jobs[len(page.Jobs)-1].CreatedAt.Truncate(time.Microsecond).Add(time.Microsecond)
			if !from.IsZero() && !span.CreatedBefore.After(from) {
				span.CreatedBefore = from
			}
		}
		if span.CreatedBefore.IsZero() || span.CreatedBefore.After(from) {
			rows, err := a.many(jc.jobs, ctx, &span)
			if err != nil {
				return all, fmt.Errorf("%w (%s %s before this error)", err, count(len(all), "job"), a.done)
			}
			for _, row := range rows {
				all = append(all, row.ID)
			}
			p.update(len(all))
		}
		if page.NextCursor == "" {
			return all, nil
		}
		from = span.CreatedBefore
		if page, err = jc.List(ctx, &sluice.ListFilter{JobFilter: f, Limit: actBatch, Cursor: page.NextCursor}); err != nil {
			return all, err
		}
	}
}
