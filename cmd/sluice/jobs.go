package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluiceweb"
)

func jobCommands() []command {
	return []command{
		{name: "list", args: "[filters]", summary: "list jobs, oldest first, a page at a time", run: runList},
		{name: "get", args: "ID...", summary: "show jobs in full", run: runGet},
		{name: "stats", args: "[--topic T] [--queue Q]", summary: "count jobs by status, topic and queue", run: runStats},
		{name: "explain", args: "ID", summary: "say why a job is not running (or is)", run: runExplain},
	}
}

// listJSON is list's --json output.
type listJSON struct {
	Jobs       []*sluice.JobRow `json:"items"`
	Total      int              `json:"total"`
	NextCursor string           `json:"next_cursor,omitempty"`
}

func runList(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("list", "[filters]")
	ff := addFilterFlags(fs, false)
	limit := fs.Int("limit", sluice.DefaultListLimit, fmt.Sprintf("the most jobs to show (at most %d)", sluice.MaxListLimit))
	offset := fs.Int("offset", 0, "skip this many jobs")
	cursor := fs.String("cursor", "", "continue after an earlier page (its next cursor)")
	newest := fs.Bool("newest-first", false, "list the newest jobs first")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("list takes no arguments, only flags (got %q)", pos[0])
	}
	if *limit < 1 {
		return usageErrorf("--limit must be at least 1")
	}
	f := &sluice.ListFilter{JobFilter: ff.filter(), Limit: *limit, Offset: *offset, Cursor: *cursor}
	if *newest {
		f.Order = sluice.NewestFirst
	}
	jc, done, err := c.client(ctx)
	if err != nil {
		return err
	}
	defer done()
	res, err := jc.List(ctx, f)
	if err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.out(), listJSON{Jobs: res.Jobs, Total: res.Total, NextCursor: res.NextCursor})
	}
	// The columns of groups show when a job of the page is in one.
	grouped := slices.ContainsFunc(res.Jobs, func(j *sluice.JobRow) bool { return j.GroupID != "" })
	tw := tabwriter.NewWriter(c.out(), 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "ID\tTOPIC\tQUEUE\tKEY\tSTATUS\tATTEMPT\tPRIORITY\tRUN AT\tCREATED")
	if grouped {
		fmt.Fprint(tw, "\tGROUP\tTASK")
	}
	fmt.Fprintln(tw)
	for _, j := range res.Jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d/%d\t%d\t%s\t%s", j.ID, j.Topic, j.Queue, dash(j.Key), j.Status,
			j.Attempt, j.MaxRetries+1, j.Priority, stamp(j.RunAt), stamp(j.CreatedAt))
		if grouped {
			fmt.Fprintf(tw, "\t%s\t%s", dash(j.GroupID), dash(j.Task))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(c.out(), "%d of %s", len(res.Jobs), count(res.Total, "job"))
	if res.NextCursor != "" {
		fmt.Fprintf(c.out(), "; next page: --cursor %s", res.NextCursor)
	}
	fmt.Fprintln(c.out())
	return nil
}

func runGet(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("get", "ID...")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErrorf("get wants at least one job ID")
	}
	if err := checkIDs(pos); err != nil {
		return err
	}
	jc, done, err := c.client(ctx)
	if err != nil {
		return err
	}
	defer done()
	var rows []*sluice.JobRow
	var firstErr error
	for _, id := range pos {
		row, err := jc.Get(ctx, id)
		if err != nil {
			err = jobErr(id, err)
			fmt.Fprintf(c.stderr, "sluice: %v\n", err)
			firstErr = cmpErr(firstErr, err)
			continue
		}
		rows = append(rows, row)
	}
	if c.json {
		var err error
		if len(pos) == 1 && len(rows) == 1 {
			err = writeJSON(c.out(), rows[0])
		} else if len(pos) > 1 {
			err = writeJSON(c.out(), nonNil(rows))
		}
		if err != nil {
			return err
		}
	} else {
		for i, row := range rows {
			if i > 0 {
				fmt.Fprintln(c.out())
			}
			printJob(c, row)
		}
	}
	return quiet(firstErr)
}

// cmpErr keeps the first error.
func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// quietError is an error already reported: it sets the exit code only.
type quietError struct{ err error }

func (e *quietError) Error() string { return e.err.Error() }
func (e *quietError) Unwrap() error { return e.err }

// quiet marks err as already reported.
func quiet(err error) error {
	if err == nil {
		return nil
	}
	return &quietError{err: err}
}

// nonNil returns s, or an empty slice for nil, so JSON shows [].
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// printJob writes one job in full, a field a line.
func printJob(c *cli, j *sluice.JobRow) {
	tw := tabwriter.NewWriter(c.out(), 0, 4, 2, ' ', 0)
	field := func(name, value string) { fmt.Fprintf(tw, "%s:\t%s\n", name, value) }
	field("id", j.ID)
	field("topic", j.Topic)
	field("queue", j.Queue)
	status := string(j.Status)
	if j.Waiting {
		status += ", waiting for the jobs it depends on"
	}
	field("status", status)
	field("priority", fmt.Sprint(j.Priority))
	field("attempt", fmt.Sprintf("%d of at most %d", j.Attempt, j.MaxRetries+1))
	field("run at", stamp(j.RunAt))
	field("created", stamp(j.CreatedAt))
	field("attempted", stamp(j.AttemptedAt)+byWhom(j.AttemptedBy))
	field("finalized", stamp(j.FinalizedAt))
	if j.Status == sluice.StatusProcessing {
		field("locked until", stamp(j.LockedUntil)+byWhom(j.LockedBy))
	}
	if j.UniqueKey != "" {
		field("unique key", j.UniqueKey)
	}
	if j.Key != "" {
		field("key", j.Key)
	}
	if j.Sequence != "" {
		field("sequence", string(j.Sequence)+" (its key's jobs run one at a time, in order)")
	}
	// Only a workflow's jobs have a task name.
	switch {
	case j.Task != "":
		field("workflow", j.GroupID)
		field("task", j.Task)
	case j.GroupID != "":
		field("batch", j.GroupID)
	}
	if len(j.DependsOn) > 0 {
		field("depends on", strings.Join(j.DependsOn, ", "))
	}
	if j.CallbackOf != "" {
		field("callback of", j.CallbackOf)
	}
	if len(j.Tags) > 0 {
		field("tags", strings.Join(j.Tags, ", "))
	}
	if len(j.Metadata) > 0 {
		field("metadata", string(j.Metadata))
	}
	field("payload", indentJSON(j.Payload))
	if len(j.Result) > 0 {
		field("result", indentJSON(j.Result))
	}
	if j.Progress != nil {
		p, _ := json.Marshal(j.Progress)
		field("progress", string(p))
	}
	for _, e := range j.Errors {
		field(fmt.Sprintf("error (attempt %d)", e.Attempt), firstLine(e.Error))
	}
	_ = tw.Flush()
}

func byWhom(who string) string {
	if who == "" {
		return ""
	}
	return " by " + who
}

// indentJSON returns raw JSON indented for a terminal.
func indentJSON(raw []byte) string {
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "\t", "  ") != nil {
		return string(raw)
	}
	return buf.String()
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

var statuses = []sluice.JobStatus{sluice.StatusPending, sluice.StatusProcessing, sluice.StatusCompleted,
	sluice.StatusFailed, sluice.StatusCancelled}

func runStats(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("stats", "")
	ff := addFilterFlags(fs, true)
	window := fs.Duration("window", sluice.DefaultStatsWindow, "how far back the outcome figures look")
	bucket := fs.Duration("bucket", sluiceweb.DefaultStatsBucket, "with --json: the width of each point of the series (0: no series)")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("stats takes no arguments, only flags (got %q)", pos[0])
	}
	jc, done, err := c.client(ctx)
	if err != nil {
		return err
	}
	defer done()
	f := &sluice.StatsFilter{Topics: ff.topics, Queues: ff.queues, Window: *window}
	if c.json {
		f.Bucket = *bucket
	}
	st, err := jc.Stats(ctx, f)
	if err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.out(), sluiceweb.NewStatsResponse(st, f.Bucket))
	}
	return printStats(c.out(), st)
}

// printStats writes st as two tables, jobs by queue and by topic, and a
// line of the window's outcomes.
func printStats(w io.Writer, st *sluice.Stats) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', tabwriter.AlignRight)
	row := func(name string, counts map[sluice.JobStatus]int) {
		fmt.Fprintf(tw, "%s\t", name)
		total := 0
		for _, s := range statuses {
			fmt.Fprintf(tw, "%d\t", counts[s])
			total += counts[s]
		}
		fmt.Fprintf(tw, "%d\t\n", total)
	}
	header := func(what string) {
		fmt.Fprintf(tw, "%s\t", what)
		for _, s := range statuses {
			fmt.Fprintf(tw, "%s\t", strings.ToUpper(string(s)))
		}
		fmt.Fprintln(tw, "TOTAL\t")
	}
	header("QUEUE")
	for _, q := range slices.Sorted(maps.Keys(st.ByQueue)) {
		row(q, st.ByQueue[q])
	}
	row("all", st.ByStatus)
	fmt.Fprintln(tw, "\t") // a row of its own keeps both tables' columns aligned
	header("TOPIC")
	for _, t := range slices.Sorted(maps.Keys(st.ByTopic)) {
		row(t, st.ByTopic[t])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for line := range strings.Lines(buf.String()) {
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}
	rate, run, p95 := "—", "—", "—"
	if st.SuccessRate != nil {
		rate = fmt.Sprintf("%.1f%%", 100**st.SuccessRate)
	}
	if st.Completed > 0 {
		run, p95 = st.AvgDuration.Round(time.Millisecond).String(), st.P95Duration.Round(time.Millisecond).String()
	}
	_, err := fmt.Fprintf(w, "\nlast %s: %d completed, %d failed, success rate %s, mean run %s, p95 %s\n",
		st.Window, st.Completed, st.Failed, rate, run, p95)
	return err
}

// explainJSON is explain's --json output.
type explainJSON struct {
	Job    *sluice.JobRow       `json:"job"`
	Reason sluice.ExplainReason `json:"reason"`
	Text   string               `json:"text"`
	Key    string               `json:"key,omitempty"`
	Ahead  string               `json:"ahead,omitempty"`
}

func runExplain(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("explain", "ID")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("explain wants one job ID")
	}
	if err := checkIDs(pos); err != nil {
		return err
	}
	jc, done, err := c.client(ctx)
	if err != nil {
		return err
	}
	defer done()
	ex, err := jc.Explain(ctx, pos[0])
	if err != nil {
		return jobErr(pos[0], err)
	}
	if c.json {
		return writeJSON(c.out(), explainJSON{Job: ex.Job, Reason: ex.Reason, Text: ex.Text, Key: ex.Key, Ahead: ex.Ahead})
	}
	fmt.Fprintf(c.out(), "%s (%s %s, %s): %s\n", ex.Job.ID, ex.Job.Topic, ex.Job.Status, ex.Reason, ex.Text)
	return nil
}
