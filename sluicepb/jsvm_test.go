package sluicepb_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/dop251/goja"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/plugins/jsvm"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluicepb"
)

// quickRetry retries a failed job after a millisecond.
type quickRetry struct{}

func (quickRetry) NextRetry(_ *sluice.JobRow, failedAt time.Time) time.Time {
	return failedAt.Add(time.Millisecond)
}

// newJSApp is newApp for an app with pb_hooks: hooks is the source of
// pb_hooks/jobs.pb.js, loaded with $jobs bound (opts may be nil). The app
// has a collection "notes" with a text field "text"; the test serves it.
func newJSApp(t *testing.T, opts *sluicepb.JSOptions, hooks string) *pbApp {
	t.Helper()
	return newJSAppWith(t, jsvm.Config{}, opts, hooks)
}

// newJSAppWith is newJSApp with cfg as the base of the jsvm plugin's
// configuration.
func newJSAppWith(t *testing.T, cfg jsvm.Config, opts *sluicepb.JSOptions, hooks string) *pbApp {
	t.Helper()
	dir := t.TempDir()
	data, hooksDir := filepath.Join(dir, "pb_data"), filepath.Join(dir, "pb_hooks")
	require.NoError(t, os.MkdirAll(hooksDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(hooksDir, "jobs.pb.js"), []byte(hooks), 0o644))

	app := core.NewBaseApp(core.BaseAppConfig{DataDir: data})
	jobs, err := sluicepb.Register(app, &sluicepb.Config{Sluice: &sluice.Config{RetryPolicy: quickRetry{}}})
	require.NoError(t, err)
	cfg.HooksDir, cfg.MigrationsDir = hooksDir, filepath.Join(dir, "pb_migrations")
	require.NoError(t, jsvm.Register(app, jobs.JSConfig(cfg, opts)))
	require.NoError(t, app.Bootstrap())
	require.NoError(t, app.RunAllMigrations())
	notes := core.NewBaseCollection("notes")
	notes.Fields.Add(&core.TextField{Name: "text"})
	require.NoError(t, app.Save(notes))

	p := &pbApp{app: app, jobs: jobs, dir: data}
	t.Cleanup(func() { p.terminate(t) })
	return p
}

// waitJob waits until the job has a final status and returns it.
func waitJob(t *testing.T, p *pbApp, id string) *sluice.JobRow {
	t.Helper()
	c, err := p.jobs.Client()
	require.NoError(t, err)
	var row *sluice.JobRow
	require.Eventually(t, func() bool {
		row, err = c.Get(t.Context(), id)
		require.NoError(t, err)
		return row.Status.Finished()
	}, 20*time.Second, 10*time.Millisecond)
	return row
}

// notes returns the texts of the notes, sorted.
func notes(t *testing.T, p *pbApp) []string {
	t.Helper()
	recs, err := p.app.FindAllRecords("notes")
	require.NoError(t, err)
	out := []string{}
	for _, r := range recs {
		out = append(out, r.GetString("text"))
	}
	sort.Strings(out)
	return out
}

func TestJSWorkerRetriesThenSucceeds(t *testing.T) {
	t.Parallel()
	p := newJSApp(t, nil, `
		$jobs.work("js.charge", (job) => {
			if (job.attempt === 1) {
				throw new Error("card declined for " + job.payload.order);
			}
			return { charged: job.payload.order, attempt: job.attempt, topic: job.topic, id: job.id };
		});
	`)
	p.serve(t)

	res, err := p.jobs.Enqueue(t.Context(), sluice.RawArgs{TopicName: "js.charge", Payload: json.RawMessage(`{"order": "o1"}`)}, nil)
	require.NoError(t, err)
	row := waitJob(t, p, res.Job.ID)
	require.Equal(t, sluice.StatusCompleted, row.Status)
	require.Equal(t, 2, row.Attempt)
	require.Len(t, row.Errors, 1)
	require.Equal(t, "card declined for o1", row.Errors[0].Error)
	require.JSONEq(t, `{"charged": "o1", "attempt": 2, "topic": "js.charge", "id": "`+res.Job.ID+`"}`, string(row.Result))
}

func TestJSWorkerOutcomes(t *testing.T) {
	t.Parallel()
	// One runtime: a job runs only once the one before gave it back.
	p := newJSApp(t, &sluicepb.JSOptions{Concurrency: 1}, `
		$jobs.work("js.endless", (job) => { for (;;) {} }, { maxRetries: 0, timeout: 200 });
		$jobs.work("js.broken", (job) => { throw "not an Error: " + job.attempt; }, { maxRetries: 1, timeout: "5s" });
		$jobs.work("js.async", async (job) => { throw new Error("rejected"); }, { maxRetries: 0 });
		$jobs.work("js.resolved", async (job) => { return { resolved: job.payload.n }; });
		$jobs.work("js.goerror", (job) => { $app.findRecordById("no_such_collection", "x"); }, { maxRetries: 0 });
	`)
	p.serve(t)

	enqueue := func(topic string) string {
		res, err := p.jobs.Enqueue(t.Context(), sluice.RawArgs{TopicName: topic, Payload: json.RawMessage(`{"n": 7}`)}, nil)
		require.NoError(t, err)
		return res.Job.ID
	}
	row := waitJob(t, p, enqueue("js.endless"))
	require.Equal(t, sluice.StatusFailed, row.Status)
	require.Contains(t, row.Errors[0].Error, "deadline exceeded")

	// The endless handler was interrupted: its runtime works the next jobs.
	row = waitJob(t, p, enqueue("js.broken"))
	require.Equal(t, sluice.StatusFailed, row.Status)
	require.Equal(t, 1, row.MaxRetries, "the worker's maxRetries applies")
	require.Len(t, row.Errors, 2)
	require.Equal(t, "not an Error: 1", row.Errors[0].Error)
	require.Equal(t, "not an Error: 2", row.Errors[1].Error)

	row = waitJob(t, p, enqueue("js.async"))
	require.Equal(t, sluice.StatusFailed, row.Status)
	require.Equal(t, "rejected", row.Errors[0].Error)

	row = waitJob(t, p, enqueue("js.resolved"))
	require.Equal(t, sluice.StatusCompleted, row.Status)
	require.JSONEq(t, `{"resolved": 7}`, string(row.Result), "a promise's value is the result")

	row = waitJob(t, p, enqueue("js.goerror"))
	require.Equal(t, sluice.StatusFailed, row.Status)
	require.Equal(t, "sql: no rows in result set", row.Errors[0].Error, "a Go error thrown in JavaScript keeps its message")
}

func TestJSWorkerLogsAndReportsProgress(t *testing.T) {
	t.Parallel()
	p := newJSApp(t, nil, `
		$jobs.work("js.observed", (job) => {
			job.logger.info("charging", { amount: job.payload.amount, card: "visa" });
			job.logger.warn("slow provider");
			job.reportProgress(50, "half way");
			let refused = "";
			try {
				job.reportProgress(150);
			} catch (err) {
				refused = String(err);
			}
			return { refused: refused, methods: typeof job.reportProgress + " " + typeof job.logger.debug };
		});
	`)
	p.serve(t)
	res, err := p.jobs.Enqueue(t.Context(), sluice.RawArgs{TopicName: "js.observed", Payload: json.RawMessage(`{"amount": 5}`)}, nil)
	require.NoError(t, err)
	row := waitJob(t, p, res.Job.ID)
	require.Equal(t, sluice.StatusCompleted, row.Status, "%v", row.Errors)
	require.Len(t, row.Logs, 2)
	require.Equal(t, "charging", row.Logs[0].Message)
	require.Equal(t, slog.LevelInfo, row.Logs[0].Level)
	require.Equal(t, 1, row.Logs[0].Attempt)
	require.JSONEq(t, `{"amount": 5, "card": "visa"}`, string(row.Logs[0].Attrs))
	require.Equal(t, "slow provider", row.Logs[1].Message)
	require.Equal(t, slog.LevelWarn, row.Logs[1].Level)
	var out struct{ Refused, Methods string }
	require.NoError(t, json.Unmarshal(row.Result, &out))
	require.Contains(t, out.Refused, "job.reportProgress")
	require.Equal(t, "function function", out.Methods)
}

func TestJSWorkerAcksInsideRunInTransaction(t *testing.T) {
	t.Parallel()
	p := newJSApp(t, nil, `
		$jobs.work("js.note", (job) => {
			$app.runInTransaction((txApp) => {
				const note = new Record(txApp.findCollectionByNameOrId("notes"));
				note.set("text", job.payload.text);
				txApp.save(note);
				$jobs.ack(txApp, job, { note: note.id });
				if (job.payload.text === "undo" && job.attempt === 1) {
					throw new Error("undone after the ack");
				}
			});
		});
	`)
	p.serve(t)

	var ids []string
	for _, text := range []string{"kept", "undo"} {
		res, err := p.jobs.Enqueue(t.Context(), sluice.RawArgs{TopicName: "js.note", Payload: json.RawMessage(`{"text": "` + text + `"}`)}, nil)
		require.NoError(t, err)
		ids = append(ids, res.Job.ID)
	}
	kept, undo := waitJob(t, p, ids[0]), waitJob(t, p, ids[1])
	require.Equal(t, sluice.StatusCompleted, kept.Status)
	require.Equal(t, 1, kept.Attempt)
	require.Empty(t, kept.Errors)

	// The first attempt's ack rolled back with its note: the job ran again.
	require.Equal(t, sluice.StatusCompleted, undo.Status)
	require.Equal(t, 2, undo.Attempt)
	require.Len(t, undo.Errors, 1)
	require.Equal(t, "undone after the ack", undo.Errors[0].Error)
	require.Equal(t, []string{"kept", "undo"}, notes(t, p))

	rec, err := p.app.FindFirstRecordByData("notes", "text", "undo")
	require.NoError(t, err)
	require.JSONEq(t, `{"note": "`+rec.Id+`"}`, string(undo.Result))
}

func TestJSWorkersRunWithinTheConcurrencyBound(t *testing.T) {
	t.Parallel()
	p := newJSApp(t, &sluicepb.JSOptions{Concurrency: 2}, `
		$jobs.work("js.slow", (job) => {
			const start = Date.now();
			sleep(100);
			return { start: start, end: Date.now() };
		});
	`)
	p.serve(t)

	var ids []string
	for range 6 {
		res, err := p.jobs.Enqueue(t.Context(), sluice.RawArgs{TopicName: "js.slow"}, nil)
		require.NoError(t, err)
		ids = append(ids, res.Job.ID)
	}
	type span struct{ Start, End int64 }
	var spans []span
	for _, id := range ids {
		row := waitJob(t, p, id)
		require.Equal(t, sluice.StatusCompleted, row.Status)
		var s span
		require.NoError(t, json.Unmarshal(row.Result, &s))
		spans = append(spans, s)
	}
	// The most handlers running at one instant: at each start, count the
	// spans that contain it.
	most := 0
	for _, a := range spans {
		n := 0
		for _, b := range spans {
			if b.Start <= a.Start && a.Start < b.End {
				n++
			}
		}
		most = max(most, n)
	}
	require.LessOrEqual(t, most, 2, "%v", spans)
}

func TestJSEnqueuesFromRoutesAndManagesJobs(t *testing.T) {
	t.Parallel()
	p := newJSApp(t, nil, `
		$jobs.work("js.charge", (job) => {
			return { charged: job.payload.order };
		});

		// An order and its charge in one transaction: both or neither.
		routerAdd("POST", "/orders/{ref}", (e) => {
			const ref = e.request.pathValue("ref");
			let res;
			$app.runInTransaction((txApp) => {
				const note = new Record(txApp.findCollectionByNameOrId("notes"));
				note.set("text", ref);
				txApp.save(note);
				res = $jobs.enqueueTx(txApp, "js.charge", { order: ref }, { maxRetries: 2, uniqueKey: "order-" + ref });
				if (ref.startsWith("bad")) {
					throw new Error("order refused");
				}
			});
			return e.json(201, res);
		});

		routerAdd("POST", "/enqueue", (e) => {
			const body = e.requestInfo().body;
			try {
				return e.json(201, $jobs.enqueue(body.topic, body.payload, body.options));
			} catch (err) {
				return e.json(400, { error: String(err) });
			}
		});

		routerAdd("POST", "/manage/{id}", (e) => {
			const id = e.request.pathValue("id");
			const out = {};
			try {
			out.got = $jobs.get(id).status;
			out.cancelled = $jobs.cancel(id).status;
			out.listed = $jobs.list({ topics: ["js.charge"], statuses: ["cancelled"], order: "newest", limit: 5 }).items.map((j) => j.id);
			out.keyed = $jobs.list({ keys: ["acme", "globex"] }).items.map((j) => j.id);
			const stats = $jobs.stats({ topics: ["js.charge"], window: "1h", bucket: "10m" });
			out.stats = stats.by_status;
			out.series = [stats.series.length >= 6, Object.keys(stats.series[0]).sort().join(","), stats.bucket_seconds];
			out.deleted = $jobs.delete(id).id;
			try {
				$jobs.get(id);
			} catch (err) {
				out.afterDelete = String(err);
			}
			} catch (err) {
				return e.json(500, { error: String(err), out: out });
			}
			return e.json(200, out);
		});

		// A requeued job is due at once: the worker may take it right away.
		routerAdd("POST", "/requeue/{id}", (e) => {
			const id = e.request.pathValue("id");
			const cancelled = $jobs.cancel(id).status;
			return e.json(200, { cancelled: cancelled, requeued: $jobs.requeue(id).status });
		});

		routerAdd("POST", "/ack-outside", (e) => {
			try {
				$jobs.ack($app, { id: "nope" });
				return e.json(200, {});
			} catch (err) {
				return e.json(400, { error: String(err) });
			}
		});
	`)
	p.serve(t)
	token := p.newAuth(t, core.CollectionNameSuperusers, "root@example.com")

	status, out := p.call(t, "POST", "/orders/o1", token, nil)
	require.Equal(t, 201, status, "%v", out)
	job := out["job"].(map[string]any)
	require.Equal(t, false, out["duplicate"])
	require.Equal(t, "js.charge", job["topic"])
	require.EqualValues(t, 2, job["max_retries"])
	row := waitJob(t, p, job["id"].(string))
	require.Equal(t, sluice.StatusCompleted, row.Status)
	require.JSONEq(t, `{"charged": "o1"}`, string(row.Result))

	status, _ = p.call(t, "POST", "/orders/bad1", token, nil)
	require.GreaterOrEqual(t, status, 400)
	require.Equal(t, []string{"o1"}, notes(t, p), "the refused order rolled back")
	c, err := p.jobs.Client()
	require.NoError(t, err)
	list, err := c.List(t.Context(), &sluice.ListFilter{JobFilter: sluice.JobFilter{UniqueKey: "order-bad1"}})
	require.NoError(t, err)
	require.Zero(t, list.Total, "and so did its job")

	status, out = p.call(t, "POST", "/enqueue", "", map[string]any{
		"topic": "js.charge", "payload": map[string]any{"order": "later"},
		"options": map[string]any{"delay": "1h", "priority": 3, "tags": []string{"t"}, "metadata": map[string]any{"by": "js"},
			"key": "acme", "sequence": "hold"},
	})
	require.Equal(t, 201, status, "%v", out)
	later := out["job"].(map[string]any)
	require.Equal(t, "pending", later["status"])
	require.Equal(t, "acme", later["key"])
	require.Equal(t, "hold", later["sequence"])
	require.EqualValues(t, 3, later["priority"])
	require.Equal(t, []any{"t"}, later["tags"])
	runAt, err := time.Parse(time.RFC3339Nano, later["run_at"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(time.Hour), runAt, time.Minute)

	status, out = p.call(t, "POST", "/manage/"+later["id"].(string), "", nil)
	require.Equal(t, 200, status, "%v", out)
	require.Equal(t, "pending", out["got"])
	require.Equal(t, "cancelled", out["cancelled"])
	require.Equal(t, []any{later["id"]}, out["listed"])
	require.Equal(t, []any{later["id"]}, out["keyed"], "listed by key")
	require.EqualValues(t, 1, out["stats"].(map[string]any)["cancelled"])
	require.Equal(t, []any{true, "completed,failed,start", 600.0}, out["series"], "a point per 10 minutes of the hour")
	require.Equal(t, later["id"], out["deleted"])
	require.Contains(t, out["afterDelete"], "not found")

	requeue, err := p.jobs.Enqueue(t.Context(), sluice.RawArgs{TopicName: "js.charge", Payload: json.RawMessage(`{"order": "again"}`)},
		&sluice.EnqueueOptions{RunAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	status, out = p.call(t, "POST", "/requeue/"+requeue.Job.ID, "", nil)
	require.Equal(t, 200, status, "%v", out)
	require.Equal(t, map[string]any{"cancelled": "cancelled", "requeued": "pending"}, out)
	require.Equal(t, sluice.StatusCompleted, waitJob(t, p, requeue.Job.ID).Status)

	for _, tt := range []struct {
		name string
		body map[string]any
		want string
	}{
		{"unknown option", map[string]any{"topic": "js.charge", "options": map[string]any{"runat": "x"}}, "invalid options"},
		{"runAt and delay", map[string]any{"topic": "js.charge", "options": map[string]any{"runAt": time.Now(), "delay": 5}}, "runAt and delay"},
		{"no topic", map[string]any{}, "empty topic"},
		{"no worker", map[string]any{"topic": "js.nobody"}, "unknown topic"},
		{"unknown queue", map[string]any{"topic": "js.charge", "options": map[string]any{"queue": "q"}}, "queue"},
		{"sequence without a key", map[string]any{"topic": "js.charge", "options": map[string]any{"sequence": "hold"}}, "needs a Key"},
		{"unknown sequence policy", map[string]any{"topic": "js.charge", "options": map[string]any{"key": "k", "sequence": "later"}}, "Sequence"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, out := p.call(t, "POST", "/enqueue", "", tt.body)
			require.Equal(t, 400, status, "%v", out)
			require.Contains(t, out["error"], tt.want)
		})
	}

	status, out = p.call(t, "POST", "/ack-outside", "", nil)
	require.Equal(t, 400, status)
	require.Contains(t, out["error"], "not in a transaction")

	list, err = c.List(t.Context(), &sluice.ListFilter{})
	require.NoError(t, err)
	require.Equal(t, 2, list.Total, "bad input wrote nothing")
}

// A record and its job from a JS hook: the hook opens a transaction
// around a write that is in none (app.Save, the record API) and joins the
// one a write is already in, as docs/pocketbase-js.md shows.
func TestJSRecordHookEnqueuesInTheWritesTransaction(t *testing.T) {
	t.Parallel()
	p := newJSApp(t, nil, `
		$jobs.work("js.note", (job) => {});
		onRecordCreateExecute((e) => {
			const app = e.app;
			try {
				app.runInTransaction((txApp) => {
					e.app = txApp;
					e.next();
					$jobs.enqueueTx(txApp, "js.note", { note: e.record.id }, { uniqueKey: "note-" + e.record.getString("text") });
					if (e.record.getString("text").startsWith("veto")) {
						throw new Error("vetoed");
					}
				});
			} finally {
				e.app = app;
			}
		}, "notes");
	`)
	coll, err := p.app.FindCollectionByNameOrId("notes")
	require.NoError(t, err)
	save := func(app core.App, text string) error {
		rec := core.NewRecord(coll)
		rec.Set("text", text)
		return app.Save(rec)
	}
	require.NoError(t, save(p.app, "alone"))
	require.ErrorContains(t, save(p.app, "veto alone"), "vetoed")
	require.NoError(t, p.app.RunInTransaction(func(txApp core.App) error { return save(txApp, "in a transaction") }))
	err = p.app.RunInTransaction(func(txApp core.App) error {
		if err := save(txApp, "rolled back"); err != nil {
			return err
		}
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)

	require.Equal(t, []string{"alone", "in a transaction"}, notes(t, p))
	c, err := p.jobs.Client()
	require.NoError(t, err)
	list, err := c.List(t.Context(), &sluice.ListFilter{})
	require.NoError(t, err)
	var keys []string
	for _, j := range list.Jobs {
		keys = append(keys, j.UniqueKey)
	}
	sort.Strings(keys)
	require.Equal(t, []string{"note-alone", "note-in a transaction"}, keys, "a job for each note kept, none for the others")
}

// A $jobs.work that cannot register fails the loading of pb_hooks, as any
// error of a pb_hooks file does, saying why.
func TestJSWorkRefusesBadRegistrations(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, src, want string }{
		{"no handler", `$jobs.work("js.x");`, "takes a topic and a handler"},
		{"not a function", `$jobs.work("js.x", 5);`, "the handler is not a function"},
		{"empty topic", `$jobs.work("", (job) => {});`, "empty topic"},
		{"twice", `$jobs.work("js.x", (job) => {}); $jobs.work("js.x", (job) => {});`, "duplicate worker"},
		{"unknown option", `$jobs.work("js.x", (job) => {}, { retries: 1 });`, "invalid options"},
		{"negative maxRetries", `$jobs.work("js.x", (job) => {}, { maxRetries: -1 });`, "maxRetries: -1 is negative"},
		{"bad timeout", `$jobs.work("js.x", (job) => {}, { timeout: "soon" });`, "invalid options"},
		{"zero timeout", `$jobs.work("js.x", (job) => {}, { timeout: 0 });`, "timeout: 0s is not positive"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			hooks := filepath.Join(dir, "pb_hooks")
			require.NoError(t, os.MkdirAll(hooks, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(hooks, "jobs.pb.js"), []byte(tt.src), 0o644))
			app := core.NewBaseApp(core.BaseAppConfig{DataDir: filepath.Join(dir, "pb_data")})
			jobs, err := sluicepb.Register(app, nil)
			require.NoError(t, err)
			var got any
			func() {
				defer func() { got = recover() }()
				_ = jsvm.Register(app, jobs.JSConfig(jsvm.Config{HooksDir: hooks}, nil))
			}()
			require.NotNil(t, got, "pb_hooks loaded")
			require.Contains(t, fmt.Sprint(got), tt.want)
		})
	}
}

func TestJSWorkCannotAddWorkersOnceServing(t *testing.T) {
	t.Parallel()
	p := newJSApp(t, nil, `
		routerAdd("POST", "/work", (e) => {
			try {
				$jobs.work("js.late", (job) => {});
				return e.json(200, {});
			} catch (err) {
				return e.json(409, { error: String(err) });
			}
		});
	`)
	p.serve(t)
	status, out := p.call(t, "POST", "/work", "", nil)
	require.Equal(t, 409, status)
	require.Contains(t, out["error"], "client already created")
}

func TestJSWorkersGetTheAuthorsOnInit(t *testing.T) {
	t.Parallel()
	p := newJSAppWith(t, jsvm.Config{OnInit: func(vm *goja.Runtime) { vm.Set("greeting", "hello from OnInit") }}, nil, `
		$jobs.work("js.greet", (job) => greeting + ", " + job.payload.name);
	`)
	p.serve(t)
	res, err := p.jobs.Enqueue(t.Context(), sluice.RawArgs{TopicName: "js.greet", Payload: json.RawMessage(`{"name": "ada"}`)}, nil)
	require.NoError(t, err)
	row := waitJob(t, p, res.Job.ID)
	require.Equal(t, sluice.StatusCompleted, row.Status, "%v", row.Errors)
	require.JSONEq(t, `"hello from OnInit, ada"`, string(row.Result))
}

// TestJSAckOnlyOwnJob: a job's ack belongs to the worker working it: a
// route (another runtime) that acks it is refused, and the job ends as
// its worker says.
func TestJSAckOnlyOwnJob(t *testing.T) {
	t.Parallel()
	p := newJSApp(t, nil, `
		$jobs.work("js.hold", (job) => {
			$app.store().set("held", job.id);
			while (!$app.store().has("go")) {
				sleep(5);
			}
			return { by: "worker" };
		});

		routerAdd("POST", "/ack-other/{id}", (e) => {
			const id = e.request.pathValue("id");
			try {
				$app.runInTransaction((txApp) => { $jobs.ack(txApp, { id: id }); });
				return e.json(200, {});
			} catch (err) {
				return e.json(400, { error: String(err) });
			} finally {
				$app.store().set("go", true);
			}
		});
	`)
	p.serve(t)
	c, err := p.jobs.Client()
	require.NoError(t, err)
	res, err := c.Enqueue(t.Context(), sluice.RawArgs{TopicName: "js.hold", Payload: []byte(`{}`)}, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return p.app.Store().Get("held") == res.Job.ID }, 10*time.Second, 5*time.Millisecond)

	status, out := p.call(t, "POST", "/ack-other/"+res.Job.ID, "", nil)
	require.Equal(t, 400, status)
	require.Contains(t, out["error"], "not the job this JavaScript worker is working")
	require.Eventually(t, func() bool {
		row, err := c.Get(t.Context(), res.Job.ID)
		return err == nil && row.Status == sluice.StatusCompleted && string(row.Result) == `{"by":"worker"}`
	}, 10*time.Second, 10*time.Millisecond)
}
