package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice"
)

// groupVerbs are the verbs of one kind of group: workflow or batch.
type groupVerbs struct {
	kind   sluice.GroupKind
	plural string
	// member names the group's jobs: "task" in a workflow, "job" in a
	// batch.
	member string
	get    func(jobs, context.Context, string) (*sluice.Group, error)
	list   func(jobs, context.Context, *sluice.GroupFilter) (*sluice.GroupList, error)
	cancel func(jobs, context.Context, string) ([]*sluice.JobRow, error)
	retry  func(jobs, context.Context, string) ([]*sluice.JobRow, error)
	// close closes a batch; nil for workflows.
	close func(jobs, context.Context, string) (*sluice.Group, error)
}

var (
	workflowVerbs = groupVerbs{kind: sluice.KindWorkflow, plural: "workflows", member: "task", get: jobs.GetWorkflow,
		list: jobs.ListWorkflows, cancel: jobs.CancelWorkflow, retry: jobs.RetryWorkflow}
	batchVerbs = groupVerbs{kind: sluice.KindBatch, plural: "batches", member: "job", get: jobs.GetBatch,
		list: jobs.ListBatches, cancel: jobs.CancelBatch, retry: jobs.RetryBatch, close: jobs.CloseBatch}
)

func groupCommands() []command {
	return []command{
		{name: "workflow", args: "list | VERB ID",
			summary: "list workflows; get, cancel or retry one",
			run:     func(ctx context.Context, c *cli, args []string) error { return c.group(ctx, workflowVerbs, args) }},
		{name: "batch", args: "list | VERB ID",
			summary: "list batches; get, cancel, retry or close one",
			run:     func(ctx context.Context, c *cli, args []string) error { return c.group(ctx, batchVerbs, args) }},
	}
}

// verbs returns the verbs of g, list first.
func (g groupVerbs) verbs() []string {
	if g.close != nil {
		return []string{"list", "get", "cancel", "retry", "close"}
	}
	return []string{"list", "get", "cancel", "retry"}
}

// groupActJSON is the --json output of cancel and retry: the jobs
// changed, as a bulk action of the web API answers.
type groupActJSON struct {
	Items []*sluice.JobRow `json:"items"`
	Count int              `json:"count"`
}

// groupJSON is the --json output of get and close: the group with its
// jobs and callbacks, empty lists rather than none, as GET
// api/workflows/{id} answers.
type groupJSON struct {
	*sluice.Group
	Jobs      []*sluice.JobRow        `json:"jobs"`
	Callbacks []*sluice.GroupCallback `json:"callbacks"`
}

// group runs "workflow VERB" or "batch VERB".
func (c *cli) group(ctx context.Context, g groupVerbs, args []string) error {
	kind, verbs := string(g.kind), g.verbs()
	fs := c.flags(kind, "list [--name N] [--status S] [--limit N] | "+strings.Join(verbs[1:], "|")+" ID")
	var f sluice.GroupFilter
	var statuses listValue
	fs.StringVar(&f.Name, "name", "", "list: only the "+g.plural+" of this name")
	fs.Var(&statuses, "status", "list: only the "+g.plural+" of these statuses: open, running, completed, failed")
	fs.IntVar(&f.Limit, "limit", sluice.DefaultListLimit, fmt.Sprintf("list: the most to show (at most %d)", sluice.MaxListLimit))
	fs.StringVar(&f.Cursor, "cursor", "", "list: continue after an earlier page (its next cursor)")
	fs.Var(timeValue{&f.CreatedFrom, time.Now}, "created-from", "list: only those created at or after this time (RFC 3339, a date, or -1h)")
	fs.Var(timeValue{&f.CreatedBefore, time.Now}, "created-before", "list: only those created before this time")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErrorf("%s wants one of %s", kind, orList(verbs))
	}
	verb, rest := pos[0], pos[1:]
	switch {
	case !slices.Contains(verbs, verb):
		return usageErrorf("unknown %s verb %q: want %s", kind, verb, orList(verbs))
	case verb == "list" && len(rest) > 0:
		return usageErrorf("%s list takes no arguments, only flags (got %q)", kind, rest[0])
	case verb == "list" && f.Limit < 1:
		return usageErrorf("--limit must be at least 1")
	case verb != "list" && len(rest) != 1:
		return usageErrorf("%s %s wants one %s ID", kind, verb, kind)
	}
	if verb != "list" {
		if err := listFlagsOnly(fs, kind+" "+verb); err != nil {
			return err
		}
		if err := checkGroupID(g.kind, rest[0]); err != nil {
			return err
		}
	}
	for _, s := range statuses {
		f.Statuses = append(f.Statuses, sluice.GroupStatus(s))
	}
	jc, done, err := c.client(ctx)
	if err != nil {
		return err
	}
	defer done()
	switch verb {
	case "list":
		return c.groupList(ctx, jc, g, &f)
	case "get", "close":
		return c.groupGet(ctx, jc, g, verb, rest[0])
	}
	act, did := g.cancel, "cancelled"
	if verb == "retry" {
		act, did = g.retry, "retried"
	}
	rows, err := act(jc.jobs, ctx, rest[0])
	if err != nil {
		return groupErr(g.kind, rest[0], err)
	}
	if c.json {
		return writeJSON(c.out(), groupActJSON{Items: nonNil(rows), Count: len(rows)})
	}
	fmt.Fprintf(c.out(), "%s %s of %s %s\n", did, count(len(rows), g.member), kind, strings.ToLower(rest[0]))
	return nil
}

// listFlagsOnly refuses the flags of list given to another verb.
func listFlagsOnly(fs *flag.FlagSet, verb string) error {
	var err error
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "name", "status", "limit", "cursor", "created-from", "created-before":
			if err == nil {
				err = usageErrorf("--%s does not go with %s", fl.Name, verb)
			}
		}
	})
	return err
}

// orList returns "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// checkGroupID refuses, as bad usage, an id that is not a workflow's or
// batch's ID (a UUID, as job IDs are), before the database is read.
func checkGroupID(kind sluice.GroupKind, id string) error {
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		return usageErrorf("%q is not a %s ID (a UUID such as 01937c2e-5f0a-7d3b-9c1e-2a4b6c8d0e1f)", id, kind)
	}
	return nil
}

// noGroupError reports that no workflow (or batch) has the ID asked for.
// It matches sluice.ErrNotFound, so the exit code is 3.
type noGroupError struct {
	kind sluice.GroupKind
	id   string
}

func (e *noGroupError) Error() string { return fmt.Sprintf("no %s %s", e.kind, e.id) }

func (e *noGroupError) Is(target error) bool { return target == sluice.ErrNotFound }

// groupErr returns err, an error of a call on the group id, as the command
// reports it: a group not found is "no workflow <id>" (or batch).
func groupErr(kind sluice.GroupKind, id string, err error) error {
	if errors.Is(err, sluice.ErrNotFound) {
		return &noGroupError{kind: kind, id: id}
	}
	return err
}

// groupList lists the groups f selects.
func (c *cli) groupList(ctx context.Context, jc *jobClient, g groupVerbs, f *sluice.GroupFilter) error {
	res, err := g.list(jc.jobs, ctx, f)
	if err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.out(), res)
	}
	tw := tabwriter.NewWriter(c.out(), 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "ID\tNAME\tSTATUS\t%sS\tCOMPLETED\tFAILED\tCANCELLED\tCREATED\tFINISHED\n", strings.ToUpper(g.member))
	for _, grp := range res.Groups {
		n := grp.Counts
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", grp.ID, dash(grp.Name), grp.Status, total(n),
			n[sluice.StatusCompleted], n[sluice.StatusFailed], n[sluice.StatusCancelled], stamp(grp.CreatedAt), stamp(grp.FinishedAt))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprint(c.out(), plural(len(res.Groups), string(g.kind), g.plural))
	if res.NextCursor != "" {
		fmt.Fprintf(c.out(), "; next page: --cursor %s", res.NextCursor)
	}
	fmt.Fprintln(c.out())
	return nil
}

// groupGet shows the group id, after closing it for verb close.
func (c *cli) groupGet(ctx context.Context, jc *jobClient, g groupVerbs, verb, id string) error {
	get := g.get
	if verb == "close" {
		get = g.close
	}
	grp, err := get(jc.jobs, ctx, id)
	if err != nil {
		return groupErr(g.kind, id, err)
	}
	if c.json {
		return writeJSON(c.out(), groupJSON{Group: grp, Jobs: nonNil(grp.Jobs), Callbacks: nonNil(grp.Callbacks)})
	}
	return c.printGroup(grp, g.member)
}

// printGroup writes grp in full: its fields a line each, then its jobs,
// a workflow's as its graph, then its callbacks.
func (c *cli) printGroup(grp *sluice.Group, member string) error {
	tw := tabwriter.NewWriter(c.out(), 0, 4, 2, ' ', 0)
	field := func(name, value string) { fmt.Fprintf(tw, "%s:\t%s\n", name, value) }
	field(string(grp.Kind), grp.ID)
	field("name", dash(grp.Name))
	status := string(grp.Status)
	if grp.Outcome != "" {
		status += ", outcome " + string(grp.Outcome)
	}
	field("status", status)
	field("created", stamp(grp.CreatedAt))
	field("started", stamp(grp.StartedAt))
	field("finished", stamp(grp.FinishedAt))
	settled := stamp(grp.SettledAt)
	if !grp.SettledAt.IsZero() {
		settled += " (its callbacks enqueued)"
	}
	field("settled", settled)
	field(member+"s", countsLine(grp.Counts))
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(grp.Jobs) == 0 {
		return c.printCallbacks(grp.Callbacks)
	}
	fmt.Fprintln(c.out())
	tw = tabwriter.NewWriter(c.out(), 0, 4, 2, ' ', 0)
	if grp.Kind == sluice.KindWorkflow {
		fmt.Fprintln(tw, "TASK\tSTATUS\tAFTER\tATTEMPT\tJOB")
		for _, t := range workflowTasks(grp.Jobs) {
			j := t.job
			fmt.Fprintf(tw, "%s%s\t%s\t%s\t%d/%d\t%s\n", strings.Repeat("  ", min(t.depth, maxIndent)), j.Task, jobStatus(j),
				dash(t.after), j.Attempt, j.MaxRetries+1, j.ID)
		}
	} else {
		fmt.Fprintln(tw, "JOB\tTOPIC\tSTATUS\tATTEMPT\tFINALIZED")
		for _, j := range grp.Jobs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\n", j.ID, j.Topic, jobStatus(j), j.Attempt, j.MaxRetries+1, stamp(j.FinalizedAt))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return c.printCallbacks(grp.Callbacks)
}

// printCallbacks writes a group's callbacks as a table: when each is
// enqueued, its topic, and its job's status once it is.
func (c *cli) printCallbacks(cbs []*sluice.GroupCallback) error {
	if len(cbs) == 0 {
		return nil
	}
	fmt.Fprintln(c.out())
	tw := tabwriter.NewWriter(c.out(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CALLBACK ON\tTOPIC\tSTATUS\tJOB")
	for _, cb := range cbs {
		status, id := "not enqueued", "-"
		if cb.Job != nil {
			status, id = string(cb.Job.Status), cb.Job.ID
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cb.On, cb.Topic, status, id)
	}
	return tw.Flush()
}

// maxIndent is how many levels deep a workflow's tasks are indented at
// most; the AFTER column names what each comes after however deep.
const maxIndent = 8

// maxAfter is how many tasks the AFTER column names before it counts
// the rest.
const maxAfter = 3

// task is a workflow's task as get shows it.
type task struct {
	job   *sluice.JobRow
	depth int    // 0 for a task after none, else 1 + the deepest it comes after
	after string // the tasks it comes after
}

// workflowTasks returns a workflow's tasks in the order of the graph:
// each after every task it comes after, and otherwise in the order they
// were added.
func workflowTasks(rows []*sluice.JobRow) []task {
	byID := make(map[string]*sluice.JobRow, len(rows))
	for _, j := range rows {
		byID[j.ID] = j
	}
	depth := make(map[string]int, len(rows))
	var depthOf func(j *sluice.JobRow) int
	depthOf = func(j *sluice.JobRow) int {
		if d, ok := depth[j.ID]; ok {
			return d
		}
		depth[j.ID] = 0 // a cycle cannot be; this ends one anyway
		d := 0
		for _, id := range j.DependsOn {
			if dep, ok := byID[id]; ok {
				d = max(d, depthOf(dep)+1)
			}
		}
		depth[j.ID] = d
		return d
	}
	out := make([]task, len(rows))
	for i, j := range rows {
		var names []string
		for _, id := range j.DependsOn {
			name := id // a task retention deleted
			if dep, ok := byID[id]; ok {
				name = dep.Task
			}
			names = append(names, name)
		}
		after := strings.Join(names[:min(len(names), maxAfter)], ", ")
		if len(names) > maxAfter {
			after += fmt.Sprintf(" +%d more", len(names)-maxAfter)
		}
		out[i] = task{job: j, depth: depthOf(j), after: after}
	}
	slices.SortStableFunc(out, func(a, b task) int { return cmp.Compare(a.depth, b.depth) })
	return out
}

// jobStatus is a job's status as the tables show it: "waiting" for a
// pending job that waits for the jobs it depends on.
func jobStatus(j *sluice.JobRow) string {
	if j.Status == sluice.StatusPending && j.Waiting {
		return "waiting"
	}
	return string(j.Status)
}

// countsLine returns counts as "6: 3 completed, 1 failed, 2 cancelled".
func countsLine(counts map[sluice.JobStatus]int) string {
	var parts []string
	for _, s := range statuses {
		if n := counts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	line := fmt.Sprint(total(counts))
	if len(parts) > 0 {
		line += ": " + strings.Join(parts, ", ")
	}
	return line
}

func total(counts map[sluice.JobStatus]int) int {
	n := 0
	for _, v := range counts {
		n += v
	}
	return n
}

// plural returns n and one or many: "1 batch", "2 batches".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// dash returns s, or "-" when it is empty.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
