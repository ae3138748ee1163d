package sluicepb_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

// groupsHooks are the pb_hooks of the tests of workflows and batches from
// JavaScript: a step that doubles its n (and fails for good when told,
// until the app's store says "pass"), a callback that records what it was
// called on, a route that enqueues an album's workflow with a note in one
// transaction, and a route that runs the code it is sent and answers its
// value, or 400 with what it threw.
const groupsHooks = `
	$jobs.work("js.step", (job) => {
		if (job.payload.fail && !$app.store().has("pass")) {
			throw new Error("told to fail");
		}
		return { n: job.payload.n * 2 };
	}, { maxRetries: 0 });
	$jobs.work("js.done", (job) => {
		return { on: job.payload.on };
	});
	$jobs.work("js.hold", (job) => {}, { maxRetries: 0 });

	routerAdd("POST", "/album/{ref}", (e) => {
		const ref = e.request.pathValue("ref");
		let res;
		$app.runInTransaction((txApp) => {
			const note = new Record(txApp.findCollectionByNameOrId("notes"));
			note.set("text", ref);
			txApp.save(note);
			const wf = $jobs.workflow("album-" + ref).add("fetch", "js.step", { n: 1 });
			const resizes = [];
			for (let i = 0; i < 3; i++) {
				wf.add("resize-" + i, "js.step", { n: 10 + i, fail: ref === "bad" && i === 1 }, null, ["fetch"]);
				resizes.push("resize-" + i);
			}
			res = wf.add("album", "js.step", { n: 100 }, { priority: 2, tags: ["album"] }, resizes)
				.add("mail", "js.step", { n: 0 }, { onDependencyFailure: "run" }, ["album"])
				.onSuccess("js.done", { on: "success" })
				.onFailure("js.done", { on: "failure" })
				.onComplete("js.done", { on: "complete" }, { priority: 1 })
				.enqueueTx(txApp);
			if (ref.startsWith("veto")) {
				throw new Error("vetoed");
			}
		});
		return e.json(201, res);
	});

	routerAdd("POST", "/run", (e) => {
		const body = e.requestInfo().body;
		try {
			const value = (new Function("args", body.code))(body.args || {});
			return e.json(200, { value: value === undefined ? null : value });
		} catch (err) {
			return e.json(400, { error: String(err) });
		}
	});
`

// run has the app run code, a function body of args, and returns its
// value; it fails the test if the code throws.
func run(t *testing.T, p *pbApp, code string, args map[string]any) any {
	t.Helper()
	status, out := p.call(t, "POST", "/run", "", map[string]any{"code": code, "args": args})
	require.Equal(t, 200, status, "%v", out)
	return out["value"]
}

// waitSettled waits until the workflow or batch get returns is settled
// with status, and returns it.
func waitSettled(t *testing.T, get func(string) (*sluice.Group, error), id string, status sluice.GroupStatus) *sluice.Group {
	t.Helper()
	var g *sluice.Group
	require.Eventually(t, func() bool {
		var err error
		g, err = get(id)
		require.NoError(t, err)
		return g.Status == status && !g.SettledAt.IsZero()
	}, 20*time.Second, 10*time.Millisecond, "%s never settled %s", id, status)
	return g
}

func TestJSWorkflow(t *testing.T) {
	t.Parallel()
	p := newJSApp(t, nil, groupsHooks)
	p.serve(t)
	c, err := p.jobs.Client()
	require.NoError(t, err)
	getWorkflow := func(id string) (*sluice.Group, error) { return c.GetWorkflow(t.Context(), id) }

	// Enqueued with a note in one transaction: each task runs after those
	// it comes after, and the callbacks on success and completion once.
	status, out := p.call(t, "POST", "/album/a1", "", nil)
	require.Equal(t, 201, status, "%v", out)
	id := out["id"].(string)
	require.Equal(t, "workflow", out["kind"])
	require.Equal(t, "album-a1", out["name"])
	jobs := out["jobs"].([]any)
	require.Len(t, jobs, 6)
	var tasks []string
	for _, j := range jobs {
		job := j.(map[string]any)
		tasks = append(tasks, job["task"].(string))
		require.Equal(t, id, job["group_id"])
	}
	require.Equal(t, []string{"fetch", "resize-0", "resize-1", "resize-2", "album", "mail"}, tasks, "in the order added")
	album := jobs[4].(map[string]any)
	require.EqualValues(t, 2, album["priority"])
	require.Equal(t, []any{"album"}, album["tags"])
	require.Equal(t, true, album["waiting"])
	require.Len(t, album["depends_on"], 3)

	g := waitSettled(t, getWorkflow, id, sluice.GroupCompleted)
	require.Equal(t, map[sluice.JobStatus]int{sluice.StatusCompleted: 6}, g.Counts)
	byTask := map[string]*sluice.JobRow{}
	for _, j := range g.Jobs {
		byTask[j.Task] = j
	}
	for _, after := range [][2]string{{"fetch", "resize-0"}, {"resize-2", "album"}, {"album", "mail"}} {
		require.False(t, byTask[after[1]].AttemptedAt.Before(byTask[after[0]].FinalizedAt), "%s started before %s finished", after[1], after[0])
	}
	require.Len(t, g.Callbacks, 3)
	for _, cb := range g.Callbacks {
		if cb.On == "failure" {
			require.Nil(t, cb.Job)
			continue
		}
		require.NotNil(t, cb.Job, cb.On)
		require.Equal(t, id, cb.Job.CallbackOf)
	}
	require.Equal(t, []string{"a1"}, notes(t, p))

	// Vetoed: neither the note nor the workflow.
	status, _ = p.call(t, "POST", "/album/veto", "", nil)
	require.GreaterOrEqual(t, status, 400)
	require.Equal(t, []string{"a1"}, notes(t, p))
	list, err := c.ListWorkflows(t.Context(), &sluice.GroupFilter{Name: "album-veto"})
	require.NoError(t, err)
	require.Empty(t, list.Groups)

	// A resize fails for good: the album is cancelled, the mail (run on
	// failure) runs, the workflow fails; retried, it completes.
	status, out = p.call(t, "POST", "/album/bad", "", nil)
	require.Equal(t, 201, status, "%v", out)
	bad := out["id"].(string)
	g = waitSettled(t, getWorkflow, bad, sluice.GroupFailed)
	require.Equal(t, map[sluice.JobStatus]int{sluice.StatusCompleted: 4, sluice.StatusFailed: 1, sluice.StatusCancelled: 1}, g.Counts)

	got := run(t, p, `
		const g = $jobs.getWorkflow(args.id);
		const failed = $jobs.listWorkflows({ statuses: ["failed"], name: "album-bad" });
		const all = $jobs.listWorkflows({ limit: 1 });
		return {
			status: g.status, outcome: g.outcome, counts: g.counts,
			tasks: g.jobs.map((j) => j.task + ":" + j.status).sort(),
			callbacks: g.callbacks.map((c) => c.on + ":" + (c.job ? c.job.status : "-")),
			failed: failed.items.map((w) => w.id), more: all.next_cursor !== undefined && all.items.length === 1,
			jobs: $jobs.list({ groupIds: [args.id], statuses: ["failed"] }).items.map((j) => j.task),
		};
	`, map[string]any{"id": bad})
	// The callbacks on failure and completion are enqueued, and may have
	// run already.
	callbacks := got.(map[string]any)["callbacks"].([]any)
	delete(got.(map[string]any), "callbacks")
	require.Len(t, callbacks, 3)
	require.Equal(t, "success:-", callbacks[0])
	require.Regexp(t, `^failure:(pending|processing|completed)$`, callbacks[1])
	require.Equal(t, map[string]any{
		"status": "failed", "outcome": "failure",
		"counts": map[string]any{"completed": 4.0, "failed": 1.0, "cancelled": 1.0},
		"tasks":  []any{"album:cancelled", "fetch:completed", "mail:completed", "resize-0:completed", "resize-1:failed", "resize-2:completed"},
		"failed": []any{bad}, "more": true,
		"jobs": []any{"resize-1"},
	}, got)

	p.app.Store().Set("pass", true)
	got = run(t, p, `const r = $jobs.retryWorkflow(args.id); return [r.count, r.items.map((j) => j.task).sort()];`, map[string]any{"id": bad})
	require.Equal(t, []any{2.0, []any{"album", "resize-1"}}, got, "the mail ran already, on the album's failure")
	g = waitSettled(t, getWorkflow, bad, sluice.GroupCompleted)
	require.Equal(t, sluice.OutcomeSuccess, g.Outcome)

	// Cancelled before it runs: every task.
	got = run(t, p, `
		const wf = $jobs.workflow("held").add("first", "js.hold", {}, { delay: "1h" }).add("then", "js.hold", {}, null, ["first"]).enqueue();
		const cancelled = $jobs.cancelWorkflow(wf.id);
		return [cancelled.count, $jobs.getWorkflow(wf.id).status];
	`, nil)
	require.Equal(t, []any{2.0, "failed"}, got)
}

func TestJSBatch(t *testing.T) {
	t.Parallel()
	p := newJSApp(t, nil, groupsHooks)
	p.serve(t)
	c, err := p.jobs.Client()
	require.NoError(t, err)
	getBatch := func(id string) (*sluice.Group, error) { return c.GetBatch(t.Context(), id) }

	// A batch kept open: jobs added outside and inside a transaction (one
	// rolled back), the callbacks once it is closed and done.
	got := run(t, p, `
		const b = $jobs.batch("imports").keepOpen()
			.add("js.step", { n: 1 })
			.add("js.step", { n: 2 }, { queue: "default" })
			.onSuccess("js.done", { on: "success" })
			.onComplete("js.done", { on: "complete" })
			.enqueue();
		const added = $jobs.addToBatch(b.id, [{ topic: "js.step", payload: { n: 3 } }, { topic: "js.step", options: { priority: 1 } }]);
		$app.runInTransaction((txApp) => {
			$jobs.addToBatchTx(txApp, b.id, [{ topic: "js.step", payload: { n: 4 } }]);
		});
		try {
			$app.runInTransaction((txApp) => {
				$jobs.addToBatchTx(txApp, b.id, [{ topic: "js.step", payload: { n: 5 } }]);
				throw new Error("rolled back");
			});
		} catch (err) {}
		return { id: b.id, kind: b.kind, jobs: b.jobs.length, added: added.count, batch: b.jobs[0].group_id === b.id };
	`, nil)
	out := got.(map[string]any)
	id := out["id"].(string)
	require.Equal(t, map[string]any{"id": id, "kind": "batch", "jobs": 2.0, "added": 2.0, "batch": true}, out)
	require.Eventually(t, func() bool {
		g, err := getBatch(id)
		require.NoError(t, err)
		return g.Counts[sluice.StatusCompleted] == 5
	}, 20*time.Second, 10*time.Millisecond)
	g, err := getBatch(id)
	require.NoError(t, err)
	require.Equal(t, sluice.GroupOpen, g.Status)
	require.Equal(t, map[sluice.JobStatus]int{sluice.StatusCompleted: 5}, g.Counts, "the rolled back job is not in")

	got = run(t, p, `
		const closed = $jobs.closeBatch(args.id);
		return [closed.status, closed.jobs.length, $jobs.listBatches({ statuses: ["completed"] }).items.map((b) => b.id)];
	`, map[string]any{"id": id})
	require.Equal(t, []any{"completed", 5.0, []any{id}}, got)
	g = waitSettled(t, getBatch, id, sluice.GroupCompleted)
	require.Equal(t, sluice.OutcomeSuccess, g.Outcome)
	status, answer := p.call(t, "POST", "/run", "", map[string]any{"code": `$jobs.addToBatch(args.id, [{ topic: "js.step" }])`,
		"args": map[string]any{"id": id}})
	require.Equal(t, 400, status)
	require.Contains(t, answer["error"], "group is closed")

	// Enqueued in a transaction with a note, one job failing for good:
	// cancelled, retried.
	got = run(t, p, `
		let b;
		$app.runInTransaction((txApp) => {
			const note = new Record(txApp.findCollectionByNameOrId("notes"));
			note.set("text", "batch");
			txApp.save(note);
			b = $jobs.batch("failing").add("js.step", { n: 1, fail: true }).add("js.hold", {}, { delay: "1h" })
				.onFailure("js.done", { on: "failure" }).enqueueTx(txApp);
		});
		return b.id;
	`, nil)
	failing := got.(string)
	require.Equal(t, []string{"batch"}, notes(t, p))
	require.Eventually(t, func() bool {
		g, err := getBatch(failing)
		require.NoError(t, err)
		return g.Counts[sluice.StatusFailed] == 1
	}, 20*time.Second, 10*time.Millisecond)
	got = run(t, p, `
		const cancelled = $jobs.cancelBatch(args.id);
		const g = $jobs.getBatch(args.id);
		return [cancelled.count, g.status, g.outcome];
	`, map[string]any{"id": failing})
	require.Equal(t, []any{1.0, "failed", "failure"}, got)
	p.app.Store().Set("pass", true)
	got = run(t, p, `return $jobs.retryBatch(args.id).count;`, map[string]any{"id": failing})
	require.Equal(t, 2.0, got)
}

// TestJSGroupsRefuseBadInput: what JavaScript passes is checked as it is
// given, and a workflow or batch that cannot be throws and writes
// nothing.
func TestJSGroupsRefuseBadInput(t *testing.T) {
	t.Parallel()
	p := newJSApp(t, nil, groupsHooks)
	p.serve(t)
	c, err := p.jobs.Client()
	require.NoError(t, err)
	open, err := c.EnqueueBatch(t.Context(), sluice.NewBatch("open").KeepOpen())
	require.NoError(t, err)
	wf, err := c.EnqueueWorkflow(t.Context(), sluice.NewWorkflow("wf").Add("a", sluice.RawArgs{TopicName: "js.hold"},
		&sluice.EnqueueOptions{RunAt: time.Now().Add(time.Hour)}))
	require.NoError(t, err)

	for _, tt := range []struct{ name, code, want string }{
		{"name not a string", `$jobs.workflow(5)`, "the name must be a string, not the number 5"},
		{"task not a string", `$jobs.workflow("w").add(1, "js.step")`, "$jobs.workflow(...).add: sluicepb: invalid options: the task's name must be a string, not the number 1"},
		{"no topic", `$jobs.workflow("w").add("a")`, "empty topic"},
		{"topic not a string", `$jobs.batch("b").add(["js.step"])`, "the topic must be a string, not an array"},
		{"after a string", `$jobs.workflow("w").add("a", "js.step", {}, {}, "fetch")`, `must be an array of task names, not the string "fetch"`},
		{"after numbers", `$jobs.workflow("w").add("a", "js.step", {}, {}, [1])`, "must be an array of task names, not an array"},
		{"unknown option", `$jobs.workflow("w").add("a", "js.step", {}, { priorty: 1 })`, "invalid options"},
		{"task option on a batch", `$jobs.batch("b").add("js.step", {}, { onDependencyFailure: "run" })`, "invalid options"},
		{"bad callback option", `$jobs.workflow("w").onSuccess("js.done", {}, { delay: "soon" })`, "invalid options"},
		{"payload", `$jobs.workflow("w").add("a", "js.step", () => 1)`, "payload"},
		{"bad policy", `$jobs.workflow("w").add("a", "js.step", {}, { onDependencyFailure: "ignore" }).enqueue()`, "OnDependencyFailure"},
		{"unknown task", `$jobs.workflow("w").add("a", "js.step", {}, {}, ["b"]).enqueue()`, `comes after "b", which is not a task`},
		{"cycle", `$jobs.workflow("w").add("a", "js.step", {}, {}, ["b"]).add("b", "js.step", {}, {}, ["a"]).enqueue()`, "cycle"},
		{"twice", `$jobs.workflow("w").add("a", "js.step").add("a", "js.step").enqueue()`, "added twice"},
		{"empty workflow", `$jobs.workflow("w").enqueue()`, "no task"},
		{"unique key", `$jobs.workflow("w").add("a", "js.step", {}, { uniqueKey: "k" }).enqueue()`, "unique key"},
		{"unknown topic", `$jobs.workflow("w").add("a", "js.nobody").enqueue()`, "unknown topic"},
		{"callback unknown topic", `$jobs.batch("b").add("js.step").onComplete("js.nobody").enqueue()`, "unknown topic"},
		{"not in a transaction", `$jobs.workflow("w").add("a", "js.step").enqueueTx($app)`, "not in a transaction"},
		{"empty batch", `$jobs.batch("b").enqueue()`, "no job"},
		{"batch unique key", `$jobs.batch("b").add("js.step", {}, { uniqueKey: "k" }).enqueue()`, "unique key"},
		{"no ID", `$jobs.getWorkflow()`, "the ID must be a string, not undefined"},
		{"unknown workflow", `$jobs.getWorkflow("00000000-0000-0000-0000-000000000000")`, "not found"},
		{"malformed ID", `$jobs.retryWorkflow("nope")`, "not found"},
		{"a workflow is no batch", `$jobs.cancelBatch("` + wf.ID + `")`, "not found"},
		{"a batch is no workflow", `$jobs.getWorkflow("` + open.ID + `")`, "not found"},
		{"unknown filter member", `$jobs.listWorkflows({ status: ["failed"] })`, "invalid options"},
		{"unknown status", `$jobs.listBatches({ statuses: ["done"] })`, "unknown status"},
		{"add to no batch", `$jobs.addToBatch("00000000-0000-0000-0000-000000000000", [{ topic: "js.step" }])`, "not found"},
		{"add not an array", `$jobs.addToBatch("` + open.ID + `", { topic: "js.step" })`, "invalid options"},
		{"add nothing", `$jobs.addToBatch("` + open.ID + `")`, "must be an array"},
		{"add unknown member", `$jobs.addToBatch("` + open.ID + `", [{ topic: "js.step", queue: "q" }])`, "invalid options"},
		{"add no topic", `$jobs.addToBatch("` + open.ID + `", [{ topic: "js.step" }, { payload: {} }])`, "jobs[1]: sluice: empty topic"},
		{"add bad option", `$jobs.addToBatch("` + open.ID + `", [{ topic: "js.step", options: { maxRetries: -1 } }])`, "maxRetries: -1 is negative"},
		{"add unique key", `$jobs.addToBatch("` + open.ID + `", [{ topic: "js.step", options: { uniqueKey: "k" } }])`, "unique key"},
		{"add tx outside", `$jobs.addToBatchTx($app, "` + open.ID + `", [])`, "not in a transaction"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, out := p.call(t, "POST", "/run", "", map[string]any{"code": tt.code})
			require.Equal(t, 400, status, "%v", out)
			require.Contains(t, out["error"], tt.want)
		})
	}

	list, err := c.List(t.Context(), &sluice.ListFilter{})
	require.NoError(t, err)
	require.Equal(t, 1, list.Total, "bad input wrote nothing")
	workflows, err := c.ListWorkflows(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, workflows.Groups, 1)
	batches, err := c.ListBatches(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, batches.Groups, 1)
}
