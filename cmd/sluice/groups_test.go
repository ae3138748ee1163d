package main_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

// groupListOut is the --json output of workflow list and batch list.
type groupListOut struct {
	Items      []*sluice.Group `json:"items"`
	NextCursor string          `json:"next_cursor"`
}

// groupActOut is the --json output of cancel and retry of a group.
type groupActOut struct {
	Items []*sluice.JobRow `json:"items"`
	Count int              `json:"count"`
}

// waitCounts waits until the group get returns has counts.
func waitCounts(t *testing.T, get func(context.Context, string) (*sluice.Group, error), id string, counts map[sluice.JobStatus]int) {
	t.Helper()
	require.Eventually(t, func() bool {
		g, err := get(context.Background(), id)
		require.NoError(t, err)
		return len(g.Counts) == len(counts) && func() bool {
			for s, n := range counts {
				if g.Counts[s] != n {
					return false
				}
			}
			return true
		}()
	}, 30*time.Second, 20*time.Millisecond, "counts of %s", id)
}

func TestWorkflowVerbs(t *testing.T) {
	t.Parallel()
	eachDB(t, true, func(t *testing.T, d *db) {
		ctx := t.Context()
		// fetch fails for good, which cancels the tasks after it; other
		// has no worker and stays pending.
		w := sluice.NewWorkflow("album").
			Add("fetch", sluice.RawArgs{TopicName: "fail"}, &sluice.EnqueueOptions{MaxRetries: sluice.NoRetries}).
			Add("resize-0", sluice.RawArgs{TopicName: "resize"}, nil, "fetch").
			Add("resize-1", sluice.RawArgs{TopicName: "resize"}, nil, "fetch").
			Add("album", sluice.RawArgs{TopicName: "album"}, nil, "resize-0", "resize-1").
			Add("other", sluice.RawArgs{TopicName: "other"}, nil).
			OnFailure(sluice.RawArgs{TopicName: "mail_support"}, nil)
		res, err := d.lib.EnqueueWorkflow(ctx, w)
		require.NoError(t, err)
		id := res.ID

		list := decode[groupListOut](t, d.run(t, "workflow", "list", "--json").ok(t))
		require.Len(t, list.Items, 1)
		require.Equal(t, id, list.Items[0].ID)
		require.Equal(t, sluice.GroupRunning, list.Items[0].Status)
		require.Equal(t, map[sluice.JobStatus]int{sluice.StatusPending: 5}, list.Items[0].Counts)
		out := d.run(t, "workflow", "list").ok(t)
		require.Contains(t, out, "TASKS")
		require.Contains(t, out, id+"  album  running")
		require.True(t, strings.HasSuffix(out, "1 workflow\n"), out)

		// get shows the graph: each task after those it comes after,
		// indented by its depth.
		out = d.run(t, "workflow", "get", id).ok(t)
		require.Contains(t, out, "workflow:  "+id)
		require.Contains(t, out, "tasks:     5: 5 pending")
		_, table, ok := strings.Cut(out, "\nTASK ")
		require.True(t, ok, out)
		var order []string
		table, _, _ = strings.Cut(table, "\n\n") // the callbacks' table follows
		for _, l := range strings.Split(table, "\n")[1:] {
			if f := strings.Fields(l); len(f) > 0 {
				order = append(order, f[0])
			}
		}
		require.Equal(t, []string{"fetch", "other", "resize-0", "resize-1", "album"}, order)
		require.Regexp(t, `\n    album +waiting +resize-0, resize-1 +0/4 +`+res.Tasks["album"].ID, out)
		require.Regexp(t, `\n  resize-0 +waiting +fetch +0/4`, out)
		require.Regexp(t, `\nfetch +pending +- +0/1`, out)
		got := decode[*sluice.Group](t, d.run(t, "workflow", "get", "--json", id).ok(t))
		require.Len(t, got.Jobs, 5)
		require.Equal(t, sluice.KindWorkflow, got.Kind)
		require.Len(t, got.Callbacks, 1)
		require.Equal(t, "mail_support", got.Callbacks[0].Topic)
		require.Nil(t, got.Callbacks[0].Job, "not enqueued yet")

		// fetch fails: the tasks after it are cancelled, other still waits
		// for a worker.
		stop := d.startFailing()
		waitCounts(t, d.lib.GetWorkflow, id, map[sluice.JobStatus]int{sluice.StatusFailed: 1, sluice.StatusCancelled: 3, sluice.StatusPending: 1})
		stop()
		require.Empty(t, decode[groupListOut](t, d.run(t, "workflow", "list", "--json", "--status", "failed").ok(t)).Items)

		// Cancelled: other too; the workflow failed and its callback is in.
		require.Equal(t, "cancelled 1 task of workflow "+id+"\n", d.run(t, "workflow", "cancel", id).ok(t))
		got = decode[*sluice.Group](t, d.run(t, "workflow", "get", "--json", strings.ToUpper(id)).ok(t))
		require.Equal(t, sluice.GroupFailed, got.Status)
		require.Equal(t, sluice.OutcomeFailure, got.Outcome)
		require.False(t, got.SettledAt.IsZero())
		out = d.run(t, "workflow", "get", id).ok(t)
		require.Contains(t, out, "status:    failed, outcome failure")
		require.Contains(t, out, "(its callbacks enqueued)")
		require.Regexp(t, `\nCALLBACK ON +TOPIC +STATUS +JOB\nfailure +mail_support +pending +[0-9a-f-]{36}\n`, out)
		require.Regexp(t, `\nfetch +failed +- +1/1`, out)
		callbacks := decode[listOut](t, d.run(t, "list", "--json", "--topic", "mail_support").ok(t))
		require.Len(t, callbacks.Jobs, 1)
		require.Equal(t, id, callbacks.Jobs[0].CallbackOf)
		require.Regexp(t, `\ncallback of: +`+id+`\n`, d.run(t, "get", callbacks.Jobs[0].ID).ok(t))

		list = decode[groupListOut](t, d.run(t, "workflow", "list", "--json", "--status", "failed,completed", "--name", "album",
			"--created-from", "-1h").ok(t))
		require.Len(t, list.Items, 1)
		require.Equal(t, "0 workflows\n", d.run(t, "workflow", "list", "--name", "nope").ok(t)[len("ID  NAME  STATUS  TASKS  COMPLETED  FAILED  CANCELLED  CREATED  FINISHED\n"):])

		// Retried: fetch and other run again, the rest wait again.
		retried := decode[groupActOut](t, d.run(t, "workflow", "retry", "--json", id).ok(t))
		require.Equal(t, 5, retried.Count)
		got = decode[*sluice.Group](t, d.run(t, "workflow", "get", "--json", id).ok(t))
		require.Equal(t, sluice.GroupRunning, got.Status)
		require.Equal(t, map[sluice.JobStatus]int{sluice.StatusPending: 5}, got.Counts)

		// Jobs by group: list shows their group and task, get the
		// workflow's, and bulk actions take --group.
		tasks := decode[listOut](t, d.run(t, "list", "--json", "--group", id).ok(t))
		require.Len(t, tasks.Jobs, 5)
		out = d.run(t, "list", "--group", id, "--topic", "fail").ok(t)
		require.Regexp(t, `GROUP +TASK\n`, out)
		require.Regexp(t, id+` +fetch\n`, out)
		require.NotContains(t, d.run(t, "list", "--topic", "mail_support").ok(t), "GROUP")
		out = d.run(t, "get", res.Tasks["album"].ID).ok(t)
		require.Regexp(t, `\nworkflow: +`+id+`\n`, out)
		require.Regexp(t, `\ntask: +album\n`, out)
		require.Regexp(t, `\nstatus: +pending, waiting for the jobs it depends on\n`, out)
		require.Equal(t, "cancelled 5 jobs\n", d.run(t, "cancel", "--group", id).ok(t))

		// Bad IDs and verbs.
		d.run(t, "workflow", "get", "nope").fails(t, 2, `"nope" is not a workflow ID`)
		d.run(t, "workflow", "cancel", "01900000-0000-7000-8000-000000000000").fails(t, 3, "no workflow 01900000-0000-7000-8000-000000000000")
		d.run(t, "workflow", "retry", "01900000-0000-7000-8000-000000000000").fails(t, 3, "no workflow")
		d.run(t, "batch", "get", id).fails(t, 3, "no batch "+id)
		d.run(t, "batch", "close", id).fails(t, 3, "no batch "+id)
		d.run(t, "workflow", "close", id).fails(t, 2, `unknown workflow verb "close"`)
		d.run(t, "workflow").fails(t, 2, "workflow wants one of list, get, cancel or retry")
		d.run(t, "workflow", "get").fails(t, 2, "wants one workflow ID")
		d.run(t, "workflow", "get", id, "--status", "failed").fails(t, 2, "--status does not go with workflow get")
		d.run(t, "workflow", "list", "--status", "done").fails(t, 2, "done")
		d.run(t, "workflow", "list", "extra").fails(t, 2, "takes no arguments")
		d.run(t, "list", "--group", "nope").fails(t, 2, "not a workflow or batch ID")
	})
}

func TestBatchVerbs(t *testing.T) {
	t.Parallel()
	eachDB(t, true, func(t *testing.T, d *db) {
		ctx := t.Context()
		b := sluice.NewBatch("imports").KeepOpen().
			Add(sluice.RawArgs{TopicName: "fail"}, &sluice.EnqueueOptions{MaxRetries: sluice.NoRetries}).
			Add(sluice.RawArgs{TopicName: "import"}, nil).
			OnComplete(sluice.RawArgs{TopicName: "report"}, nil)
		res, err := d.lib.EnqueueBatch(ctx, b)
		require.NoError(t, err)
		id := res.ID

		list := decode[groupListOut](t, d.run(t, "batch", "list", "--json", "--status", "open").ok(t))
		require.Len(t, list.Items, 1)
		require.Equal(t, sluice.KindBatch, list.Items[0].Kind)
		require.Contains(t, d.run(t, "batch", "list").ok(t), "JOBS")
		require.Empty(t, decode[groupListOut](t, d.run(t, "workflow", "list", "--json").ok(t)).Items)

		stop := d.startFailing()
		waitCounts(t, d.lib.GetBatch, id, map[sluice.JobStatus]int{sluice.StatusFailed: 1, sluice.StatusPending: 1})
		stop()
		out := d.run(t, "batch", "get", id).ok(t)
		require.Contains(t, out, "batch:     "+id)
		require.Regexp(t, `\ncomplete +report +not enqueued +-\n`, out)
		require.Contains(t, out, "status:    open")
		require.Regexp(t, res.Jobs[0].ID+` +fail +failed +1/1 +20`, out)
		require.Regexp(t, res.Jobs[1].ID+` +import +pending +0/4 +-`, out)

		// Closed, it runs until its last job is done; cancelled, it is.
		got := decode[*sluice.Group](t, d.run(t, "batch", "close", "--json", id).ok(t))
		require.Equal(t, sluice.GroupRunning, got.Status)
		require.Contains(t, d.run(t, "batch", "close", id).ok(t), "status:    running")
		require.Equal(t, "cancelled 1 job of batch "+id+"\n", d.run(t, "batch", "cancel", id).ok(t))
		got = decode[*sluice.Group](t, d.run(t, "batch", "get", "--json", id).ok(t))
		require.Equal(t, sluice.GroupFailed, got.Status)
		require.Equal(t, sluice.OutcomeFailure, got.Outcome)
		reports := decode[listOut](t, d.run(t, "list", "--json", "--topic", "report").ok(t))
		require.Len(t, reports.Jobs, 1)
		require.Equal(t, id, reports.Jobs[0].CallbackOf)

		retried := decode[groupActOut](t, d.run(t, "batch", "retry", "--json", id).ok(t))
		require.Equal(t, 2, retried.Count)
		require.Equal(t, "retried 0 jobs of batch "+id+"\n", d.run(t, "batch", "retry", id).ok(t))
		out = d.run(t, "get", res.Jobs[1].ID).ok(t)
		require.Regexp(t, `\nbatch: +`+id+`\n`, out)
		require.NotContains(t, out, "task:")

		d.run(t, "workflow", "get", id).fails(t, 3, "no workflow "+id)
		d.run(t, "batch", "close", "x").fails(t, 2, `"x" is not a batch ID`)
		d.run(t, "batch", "frob", id).fails(t, 2, "want list, get, cancel, retry or close")
	})
}
