package faults_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/faults/faultjob"
)

// The load of the workflow scenario: wfWorkflows workflows of ten tasks
// and wfBatches batches of wfBatchJobs jobs; the long form enqueues
// wfLongTimes as many.
const (
	wfWorkflows = 500
	wfBatches   = 200
	wfBatchJobs = 20
	wfLongTimes = 4
)

// The callbacks of every workflow and batch, by the last part of their
// StepArgs.Name.
const (
	onSuccess  = "on_success"
	onFailure  = "on_failure"
	onComplete = "on_complete"
)

// Scenario 12: workflows and batches under SIGKILL. Three worker
// processes of ten workers each work workflows of ten tasks, a diamond
// and a fan-out (a → b1..b4 → c → d1..d3 → e, d1 also after b1), and
// batches of twenty jobs, each group with callbacks on success, on
// failure and on completion. A quarter of the workflows have a task that
// fails for good (c, whose dependants are then cancelled; d2, which
// cancels e; or d3 before an e that runs anyway, DependencyRun), and so
// do a quarter of the batches (one job or two). While the groups are
// enqueued, and then until every job has finished, one process is killed
// with SIGKILL and restarted about once a second, on leases of one
// second.
//
// Each worker records when it began every attempt, in a transaction of
// its own before the work, and writes the job's effect in the
// transaction of its Ack. From the database afterwards, besides the
// usual invariants: no attempt of a task began before every task it
// comes after had finished (completed with its effect, or failed or been
// cancelled under DependencyRun), and no attempt of a callback before
// every job of its group had; each group that is done ran the callbacks
// of its outcome exactly once and the others never; and every job ended
// as the load meant it to (completed with its effect, failed, or
// cancelled after a failed task).
func TestWorkflowsUnderKill9(t *testing.T) {
	for _, d := range bothDrivers {
		t.Run(d.name, func(t *testing.T) {
			tg := d.new(t)
			_, err := tg.db.ExecContext(t.Context(), faultjob.AttemptsDDL)
			require.NoError(t, err)
			procs := startWorkers(t, tg, 3, "-topics", faultjob.StepTopic, "-attempts", "-workers", "10", "-conns", "8",
				"-work", "2ms", "-lease", "1s")
			times := 1
			if *longForm {
				times = wfLongTimes
			}
			ld := &groupLoad{tg: tg, jobs: map[string]*jobPlan{}}
			start := time.Now()
			faults := ld.run(t, procs, times*wfWorkflows, times*wfBatches, span(40*time.Second, 5*time.Minute))
			tg.drainGroups(t, 2*time.Minute)
			t.Logf("every job finished %.1f s after the first enqueue", time.Since(start).Seconds())
			stopAll(procs)

			res := ld.check(t)
			summary(t, "FAULT_WORKFLOW driver=%s workflows=%d batches=%d kills=%d rescued=%d early_starts=%d callbacks_missing=%d callbacks_duplicated=%d lost=%d stuck=%d",
				tg.driver, ld.workflows, ld.batches, len(faults), res.rescued, res.earlyStarts, res.missing, res.duplicated,
				res.v.lost, res.v.stuck)
			res.v.recovery = recovery(res.done, faults)
			report(t, "workflow", tg, res.v)
			require.Zero(t, res.earlyStarts, "tasks or callbacks that began before what they come after finished")
			require.Zero(t, res.missing, "callbacks of a done group's outcome that never ran")
			require.Zero(t, res.duplicated, "callbacks that ran, or were inserted, more often than the outcome asks")
			require.Zero(t, res.unknown, "attempts of jobs the load does not know")
			require.Positive(t, res.rescued, "no kill left an attempt for a rescue")
			require.Positive(t, res.settledByWorker, "no group was settled by the outcome of its last job")
			require.Positive(t, res.settledByPass, "no group was settled by a pass after its last job")
			for _, role := range []string{onSuccess, onFailure, onComplete} {
				for _, kind := range []sluice.GroupKind{sluice.KindWorkflow, sluice.KindBatch} {
					require.Positive(t, res.ran[kind][role], "no %s of a %s ran", role, kind)
				}
			}
		})
	}
}

// groupLoad enqueues the scenario's workflows and batches and remembers
// what each job is meant to end as.
type groupLoad struct {
	tg                 *target
	workflows, batches int
	groups             []*groupPlan
	jobs               map[string]*jobPlan // by job ID, the groups' jobs (not their callbacks)
}

// groupPlan is one enqueued workflow or batch.
type groupPlan struct {
	id, label string
	kind      sluice.GroupKind
	fails     bool     // a job of it fails for good
	members   []string // its jobs' IDs
}

// jobPlan is one job of a group as enqueued: the status it must end with
// and, for a task, the IDs of the tasks it comes after and their policy.
type jobPlan struct {
	group  *groupPlan
	name   string
	want   sluice.JobStatus
	after  []string
	policy sluice.DependencyPolicy
}

// run enqueues workflows workflows and batches batches, two or three
// workflows to a batch, while killing one of procs with SIGKILL (and
// restarting it) about once a second, and goes on killing until every
// job has finished or limit has passed; it returns when each kill began.
func (ld *groupLoad) run(t *testing.T, procs []*proc, workflows, batches int, limit time.Duration) []time.Time {
	t.Helper()
	var faults []time.Time
	end, next := time.Now().Add(limit), time.Now().Add(jitter(700, 1300))
	kill := func() {
		faults = append(faults, time.Now())
		killAndRestart(procs)
		next = time.Now().Add(jitter(700, 1300))
	}
	for i := range workflows {
		ld.enqueueWorkflow(t, i)
		for j := i * batches / workflows; j < (i+1)*batches/workflows; j++ {
			ld.enqueueBatch(t, j)
		}
		if time.Now().After(next) {
			kill()
		}
	}
	for time.Now().Before(end) && ld.tg.unfinished(t) > 0 {
		time.Sleep(time.Until(next))
		kill()
	}
	return faults
}

// workflowTask is one task of the scenario's workflow shape.
type workflowTask struct {
	name  string
	after []string
}

// workflowShape is the scenario's workflow: a diamond (a, b1..b4, c)
// and a fan-out and in (c, d1..d3, e), with d1 after b1 as well.
var workflowShape = []workflowTask{
	{"a", nil},
	{"b1", []string{"a"}}, {"b2", []string{"a"}}, {"b3", []string{"a"}}, {"b4", []string{"a"}},
	{"c", []string{"b1", "b2", "b3", "b4"}},
	{"d1", []string{"c", "b1"}}, {"d2", []string{"c"}}, {"d3", []string{"c"}},
	{"e", []string{"d1", "d2", "d3"}},
}

// workflowPlan returns how workflow i is meant to end: the task that
// fails for good (none for most), what each task ends as, and whether e
// runs whatever its dependencies' outcomes.
func workflowPlan(i int) (failing string, want map[string]sluice.JobStatus, eRuns bool) {
	want = map[string]sluice.JobStatus{}
	for _, task := range workflowShape {
		want[task.name] = sluice.StatusCompleted
	}
	switch i % 20 {
	case 3, 13: // d2 fails, and e is cancelled
		failing, want["d2"], want["e"] = "d2", sluice.StatusFailed, sluice.StatusCancelled
	case 7, 17: // c fails, and everything after it is cancelled
		failing, want["c"] = "c", sluice.StatusFailed
		for _, task := range []string{"d1", "d2", "d3", "e"} {
			want[task] = sluice.StatusCancelled
		}
	case 11: // d3 fails, and e runs anyway
		failing, want["d3"], eRuns = "d3", sluice.StatusFailed, true
	}
	return failing, want, eRuns
}

// enqueueWorkflow enqueues workflow i.
func (ld *groupLoad) enqueueWorkflow(t *testing.T, i int) {
	t.Helper()
	label := fmt.Sprintf("wf-%d", i)
	failing, want, eRuns := workflowPlan(i)
	w := sluice.NewWorkflow(label)
	policies := map[string]sluice.DependencyPolicy{}
	for _, task := range workflowShape {
		opts := &sluice.EnqueueOptions{MaxRetries: faultjob.MaxRetries}
		if task.name == failing {
			opts.MaxRetries = sluice.NoRetries
		}
		if len(task.after) > 0 {
			policies[task.name] = sluice.DependencyCancel
		}
		if task.name == "e" && eRuns {
			opts.OnDependencyFailure, policies[task.name] = sluice.DependencyRun, sluice.DependencyRun
		}
		w.Add(task.name, faultjob.StepArgs{Name: label + "/" + task.name, Fail: task.name == failing}, opts, task.after...)
	}
	addCallbacks(label, w.OnSuccess, w.OnFailure, w.OnComplete)
	res, err := ld.tg.client.EnqueueWorkflow(t.Context(), w)
	require.NoError(t, err)
	g := ld.add(res.ID, label, sluice.KindWorkflow, failing != "")
	for _, task := range workflowShape {
		plan := ld.member(g, res.Tasks[task.name].ID, task.name, want[task.name])
		plan.policy = policies[task.name]
		for _, a := range task.after {
			plan.after = append(plan.after, res.Tasks[a].ID)
		}
	}
	ld.workflows++
}

// enqueueBatch enqueues batch i: one of its jobs fails for good in one
// batch in four, and a second in one in eight. Its jobs take four
// priorities in turn, so that claims take the jobs of several batches at
// once rather than twenty of one: on Postgres the outcomes of one group's
// jobs take turns on its row (each may finish it), and a load of whole
// batches one after another would spend most of its time waiting there.
func (ld *groupLoad) enqueueBatch(t *testing.T, i int) {
	t.Helper()
	label := fmt.Sprintf("batch-%d", i)
	failing := map[int]bool{}
	if i%4 == 1 {
		failing[i%wfBatchJobs] = true
	}
	if i%8 == 5 {
		failing[(i+7)%wfBatchJobs] = true
	}
	b := sluice.NewBatch(label)
	for j := range wfBatchJobs {
		opts := &sluice.EnqueueOptions{MaxRetries: faultjob.MaxRetries, Priority: j % 4}
		if failing[j] {
			opts.MaxRetries = sluice.NoRetries
		}
		b.Add(faultjob.StepArgs{Name: fmt.Sprintf("%s/%d", label, j), Fail: failing[j]}, opts)
	}
	addCallbacks(label, b.OnSuccess, b.OnFailure, b.OnComplete)
	res, err := ld.tg.client.EnqueueBatch(t.Context(), b)
	require.NoError(t, err)
	g := ld.add(res.ID, label, sluice.KindBatch, len(failing) > 0)
	for j, row := range res.Jobs {
		want := sluice.StatusCompleted
		if failing[j] {
			want = sluice.StatusFailed
		}
		ld.member(g, row.ID, strconv.Itoa(j), want)
	}
	ld.batches++
}

// addCallbacks adds the three callbacks of the group label through its
// builder's methods.
func addCallbacks[B any](label string, success, failure, complete func(sluice.JobArgs, *sluice.EnqueueOptions) B) {
	opts := &sluice.EnqueueOptions{MaxRetries: faultjob.MaxRetries}
	success(faultjob.StepArgs{Name: label + "/" + onSuccess}, opts)
	failure(faultjob.StepArgs{Name: label + "/" + onFailure}, opts)
	complete(faultjob.StepArgs{Name: label + "/" + onComplete}, opts)
}

func (ld *groupLoad) add(id, label string, kind sluice.GroupKind, fails bool) *groupPlan {
	g := &groupPlan{id: id, label: label, kind: kind, fails: fails}
	ld.groups = append(ld.groups, g)
	return g
}

func (ld *groupLoad) member(g *groupPlan, id, name string, want sluice.JobStatus) *jobPlan {
	g.members = append(g.members, id)
	plan := &jobPlan{group: g, name: name, want: want}
	ld.jobs[id] = plan
	ld.tg.commit(id)
	return plan
}

// drainGroups waits until every job has finished and every group that
// is done has been settled, failing t after timeout. A group finished by
// a rescue or by the release that cancels a task is settled by a
// client's next pass, after its last job finished.
func (tg *target) drainGroups(t *testing.T, timeout time.Duration) {
	t.Helper()
	tg.drain(t, timeout)
	deadline := time.Now().Add(timeout)
	for {
		var n int
		require.NoError(t, tg.db.QueryRowContext(t.Context(),
			`SELECT count(*) FROM sluice_jobs_groups WHERE settled_at IS NULL`).Scan(&n))
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%d groups not settled after %s", n, timeout)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The last settles inserted callbacks: they drain too.
	tg.drain(t, timeout)
}

// groupResult is what the database says of the scenario's groups.
type groupResult struct {
	v                              verdict
	done                           []int64 // when each effect was done
	earlyStarts, missing           int
	duplicated, rescued, unknown   int
	ran                            map[sluice.GroupKind]map[string]int // callbacks run, by kind and role
	settledByPass, settledByWorker int
}

// check reads every job, effect, attempt and group, and counts what
// went wrong (see TestWorkflowsUnderKill9).
func (ld *groupLoad) check(t *testing.T) groupResult {
	t.Helper()
	tg := ld.tg
	jobs := tg.listJobs(t, sluice.QueueDefault)
	effects, counts, done := tg.effectsCounted(t)
	res := groupResult{done: done, ran: map[sluice.GroupKind]map[string]int{sluice.KindWorkflow: {}, sluice.KindBatch: {}}}
	res.v.jobs = len(jobs)

	// Every job: lost, stuck (and every group never settled), effects
	// beyond one, attempts rescued.
	for id, plan := range ld.jobs {
		row := jobs[id]
		if row == nil || row.Status != plan.want || plan.want == sluice.StatusCompleted && counts[id] == 0 {
			res.v.lost++
			if res.v.lost <= 5 {
				t.Logf("lost: %s %s (job %s) wants %s; stored %v, effects %d: %+v", plan.group.label, plan.name, id,
					plan.want, row != nil, counts[id], row)
			}
		}
	}
	for id, row := range jobs {
		if !row.Status.Finished() {
			if res.v.stuck++; res.v.stuck <= 5 {
				t.Logf("stuck: job %s %s (%s)", id, row.Status, row.Payload)
			}
		}
		for _, a := range row.History() {
			if a.Error == "lease expired" {
				res.rescued++
			}
		}
	}
	var unsettled int
	require.NoError(t, tg.db.QueryRowContext(t.Context(),
		`SELECT count(*) FROM sluice_jobs_groups WHERE settled_at IS NULL`).Scan(&unsettled))
	if unsettled > 0 {
		res.v.stuck += unsettled
		t.Logf("%d groups never settled", unsettled)
	}
	for id, n := range counts {
		switch {
		case jobs[id] == nil:
			res.v.dups += n
			t.Logf("effect of unknown job %s", id)
		case n > 1:
			res.v.dups += n - 1
			t.Logf("job %s (%s) took effect %d times", id, jobs[id].Payload, n)
		}
	}

	callbacks := ld.callbacks(t, jobs, &res)
	for _, g := range ld.groups {
		ld.checkGroup(t, g, jobs, counts, callbacks[g.id], &res)
	}
	ld.checkStarts(t, jobs, effects, &res)
	t.Logf("attempts rescued %d; groups settled with their last job's outcome %d, by a pass after it %d",
		res.rescued, res.settledByWorker, res.settledByPass)
	return res
}

// callbacks returns the callback jobs of each group by role; a callback
// of no group of the load, or not named after its group, counts as
// duplicated.
func (ld *groupLoad) callbacks(t *testing.T, jobs map[string]*sluice.JobRow, res *groupResult) map[string]map[string][]*sluice.JobRow {
	t.Helper()
	labels := map[string]string{}
	for _, g := range ld.groups {
		labels[g.id] = g.label
	}
	out := map[string]map[string][]*sluice.JobRow{}
	for id, row := range jobs {
		if row.CallbackOf == "" {
			if ld.jobs[id] == nil {
				res.duplicated++
				t.Logf("a job of no group and no callback: %s %s", id, row.Payload)
			}
			continue
		}
		var args faultjob.StepArgs
		require.NoError(t, json.Unmarshal(row.Payload, &args))
		label, role, _ := strings.Cut(args.Name, "/")
		if labels[row.CallbackOf] != label {
			res.duplicated++
			t.Logf("callback %s (%s) of group %s, which is %q", id, args.Name, row.CallbackOf, labels[row.CallbackOf])
			continue
		}
		if out[row.CallbackOf] == nil {
			out[row.CallbackOf] = map[string][]*sluice.JobRow{}
		}
		out[row.CallbackOf][role] = append(out[row.CallbackOf][role], row)
	}
	return out
}

// checkGroup counts the callbacks of group g that should have run once
// and did not, and those that ran or were inserted beyond what its
// outcome asks (once for on_complete and the callback of its outcome,
// never for the other), and whether a worker's outcome or a later pass
// settled it.
func (ld *groupLoad) checkGroup(t *testing.T, g *groupPlan, jobs map[string]*sluice.JobRow, counts map[string]int,
	callbacks map[string][]*sluice.JobRow, res *groupResult) {
	t.Helper()
	var last *sluice.JobRow
	for _, id := range g.members {
		row := jobs[id]
		if row == nil || !row.Status.Finished() {
			return // not done: lost or stuck already counts it
		}
		if last == nil || row.FinalizedAt.After(last.FinalizedAt) {
			last = row
		}
	}
	if last.Status == sluice.StatusCancelled || last.Status == sluice.StatusFailed && lastError(last) == "lease expired" {
		res.settledByPass++
	} else {
		res.settledByWorker++
	}
	for _, role := range []string{onSuccess, onFailure, onComplete} {
		want := 0
		if role == onComplete || (role == onFailure) == g.fails {
			want = 1
		}
		inserted, effects, ran := len(callbacks[role]), 0, 0
		for _, row := range callbacks[role] {
			effects += counts[row.ID]
			if row.Status == sluice.StatusCompleted && counts[row.ID] > 0 {
				ran++
			}
		}
		res.ran[g.kind][role] += min(ran, 1)
		if want == 1 && ran == 0 {
			res.missing++
			t.Logf("%s %s (%s): %s never ran: %+v", g.kind, g.label, g.id, role, callbacks[role])
		}
		if extra := max(inserted, effects) - want; extra > 0 {
			res.duplicated += extra
			t.Logf("%s %s (%s): %s inserted %d times, took effect %d times, wanted %d", g.kind, g.label, g.id, role,
				inserted, effects, want)
		}
	}
}

// lastError returns the error of job's last failed attempt.
func lastError(job *sluice.JobRow) string {
	if h := job.History(); len(h) > 0 {
		return h[len(h)-1].Error
	}
	return ""
}

// checkStarts counts the attempts that began too early: a task's before
// every task it comes after finished (completed with its effect; or,
// under DependencyRun, failed or cancelled), a callback's before every
// job of its group finished. A job finishes when its outcome's time is
// taken, before the outcome commits, and the next job can only be
// claimed after that commit, so no correct run begins one earlier.
func (ld *groupLoad) checkStarts(t *testing.T, jobs map[string]*sluice.JobRow, effects map[string]*effect, res *groupResult) {
	t.Helper()
	members := map[string][]string{}
	for _, g := range ld.groups {
		members[g.id] = g.members
	}
	ended := func(id string, runs bool) (int64, bool) {
		row := jobs[id]
		switch {
		case row == nil || !row.Status.Finished() || row.FinalizedAt.IsZero():
			return 0, false
		case row.Status == sluice.StatusCompleted:
			return row.FinalizedAt.UnixMicro(), effects[id] != nil
		default:
			return row.FinalizedAt.UnixMicro(), runs
		}
	}
	for _, a := range ld.tg.attempts(t) {
		id, start := a.job, a.start
		row := jobs[id]
		if row == nil {
			res.unknown++
			continue
		}
		var before []string
		runs := false
		if plan := ld.jobs[id]; plan != nil {
			before, runs = plan.after, plan.policy == sluice.DependencyRun
		} else {
			before, runs = members[row.CallbackOf], true
		}
		for _, dep := range before {
			if at, ok := ended(dep, runs); !ok || at > start {
				res.earlyStarts++
				if res.earlyStarts <= 5 {
					t.Logf("attempt %d of %s (job %s) began at %d, before job %s finished (at %d, or never: %v)", a.attempt,
						row.Payload, id, start, dep, at, !ok)
				}
				break
			}
		}
	}
}
