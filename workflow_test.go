package sluice_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

// stepArgs is a task of the workflows and batches of these tests: it
// records that it started and finished, returns N doubled as its result,
// sums the results of the tasks it comes after into its own, and fails
// (once per Fail) or blocks when told.
type stepArgs struct {
	Name  string `json:"name"`
	N     int    `json:"n"`
	Sum   bool   `json:"sum,omitempty"`
	Fail  bool   `json:"fail,omitempty"`
	Block bool   `json:"block,omitempty"`
}

func (stepArgs) Topic() string { return "step" }

// callbackArgs is a callback job of these tests.
type callbackArgs struct {
	On string `json:"on"`
}

func (callbackArgs) Topic() string { return "callback" }

// steps records what the workers of a test did, in order.
type steps struct {
	mu        sync.Mutex
	log       []string
	callbacks map[string][]string // callback On -> the groups they were of
	failing   map[string]bool     // tasks that fail while set
	block     chan struct{}
}

func newSteps() *steps {
	return &steps{callbacks: map[string][]string{}, failing: map[string]bool{}, block: make(chan struct{})}
}

func (s *steps) note(entry string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, entry)
}

// index returns where entry is in the log, -1 when it is not.
func (s *steps) index(entry string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Index(s.log, entry)
}

func (s *steps) calls(on string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.callbacks[on])
}

func (s *steps) setFailing(task string, fail bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing[task] = fail
}

// stepWorker is a worker of steps that never retries: a step told to
// fail fails for good.
type stepWorker func(ctx context.Context, job *sluice.Job[stepArgs]) error

func (f stepWorker) Work(ctx context.Context, job *sluice.Job[stepArgs]) error { return f(ctx, job) }

func (stepWorker) MaxRetries() int { return sluice.NoRetries }

func (stepWorker) Timeout(*sluice.Job[stepArgs]) time.Duration { return 0 }

func (stepWorker) RetryPolicy() sluice.RetryPolicy { return nil }

func (stepWorker) Middleware() []sluice.WorkMiddleware { return nil }

// config returns a client's config with workers for steps and callbacks.
func (s *steps) config() *sluice.Config {
	w := sluice.NewWorkers()
	sluice.AddWorker(w, stepWorker(func(ctx context.Context, job *sluice.Job[stepArgs]) error {
		name := job.Args.Name
		s.note("start:" + name)
		if job.Args.Block {
			select {
			case <-s.block:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		s.mu.Lock()
		fail := job.Args.Fail && s.failing[name]
		s.mu.Unlock()
		if fail {
			return errors.New("told to fail")
		}
		if name == "mail" {
			// The mail comes after the album only.
			if _, err := sluice.DependencyResult[int](ctx, "fetch"); !errors.Is(err, sluice.ErrNotFound) {
				return fmt.Errorf("the result of a task the mail does not come after: %v", err)
			}
		}
		result := job.Args.N * 2
		if job.Args.Sum {
			deps, err := sluice.Dependencies(ctx)
			if err != nil {
				return err
			}
			for _, d := range deps {
				n, err := sluice.DependencyResult[int](ctx, d.Task)
				if err != nil {
					return err
				}
				result += n
			}
		}
		if err := sluice.SetResult(ctx, result); err != nil {
			return err
		}
		s.note("done:" + name)
		return nil
	}))
	sluice.AddWorker(w, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[callbackArgs]) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.callbacks[job.Args.On] = append(s.callbacks[job.Args.On], job.CallbackOf)
		return nil
	}))
	return &sluice.Config{
		Workers:      w,
		Queues:       map[string]sluice.QueueConfig{sluice.QueueDefault: {MaxWorkers: 4}},
		PollInterval: 10 * time.Millisecond,
	}
}

// waitGroup polls a workflow or batch until it has status and is
// settled (its callbacks in), and returns it.
func waitGroup(t *testing.T, get func(context.Context, string) (*sluice.Group, error), id string, status sluice.GroupStatus) *sluice.Group {
	t.Helper()
	var g *sluice.Group
	require.Eventually(t, func() bool {
		var err error
		g, err = get(t.Context(), id)
		require.NoError(t, err)
		return g.Status == status && !g.SettledAt.IsZero()
	}, 15*time.Second, 5*time.Millisecond, "group %s never settled %s", id, status)
	return g
}

// eventually waits for cond.
func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, 15*time.Second, 5*time.Millisecond, msg)
}

// album returns the workflow of the tests: a fan-out of resizes after a
// fetch, an album that sums them, and a mail after the album (a diamond
// that fans out and back in).
func album(name string, resizes int, failing string) *sluice.Workflow {
	w := sluice.NewWorkflow(name).Add("fetch", stepArgs{Name: "fetch", N: 1}, nil)
	var after []string
	for i := range resizes {
		task := fmt.Sprintf("resize-%d", i)
		w.Add(task, stepArgs{Name: task, N: 10 + i, Fail: task == failing}, nil, "fetch")
		after = append(after, task)
	}
	w.Add("album", stepArgs{Name: "album", Sum: true}, nil, after...)
	w.Add("mail", stepArgs{Name: "mail"}, nil, "album")
	return w.OnSuccess(callbackArgs{On: "success"}, nil).
		OnFailure(callbackArgs{On: "failure"}, nil).
		OnComplete(callbackArgs{On: "complete"}, nil)
}

func TestWorkflowRunsItsGraph(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testWorkflowRunsItsGraph[*sql.Tx], testWorkflowRunsItsGraph[pgx.Tx])
}

func testWorkflowRunsItsGraph[TTx any](t *testing.T, k *kit[TTx]) {
	ctx := t.Context()
	s := newSteps()
	c := k.client(t, s.config())

	// Rolled back: no task, no workflow.
	tx := k.tx(t)
	gone, err := c.EnqueueWorkflowTx(ctx, tx, album("rolled back", 3, ""))
	require.NoError(t, err)
	k.end(t, tx, false)
	_, err = c.GetWorkflow(ctx, gone.ID)
	require.ErrorIs(t, err, sluice.ErrNotFound)
	require.Zero(t, k.count(t))

	// Committed with a business write: every task runs after the tasks it
	// comes after, and the album sums the resizes' results.
	tx = k.tx(t)
	require.NoError(t, k.order(ctx, tx, "album"))
	res, err := c.EnqueueWorkflowTx(ctx, tx, album("album", 3, ""))
	require.NoError(t, err)
	k.end(t, tx, true)
	require.Len(t, res.Tasks, 6)
	for name, row := range res.Tasks {
		require.Equal(t, name, row.Task)
		require.Equal(t, res.ID, row.GroupID)
	}
	require.True(t, res.Tasks["album"].Waiting)
	require.ElementsMatch(t, []string{res.Tasks["resize-0"].ID, res.Tasks["resize-1"].ID, res.Tasks["resize-2"].ID},
		res.Tasks["album"].DependsOn)

	g := waitGroup(t, c.GetWorkflow, res.ID, sluice.GroupCompleted)
	require.Equal(t, sluice.OutcomeSuccess, g.Outcome)
	require.Equal(t, map[sluice.JobStatus]int{sluice.StatusCompleted: 6}, g.Counts)
	require.Len(t, g.Jobs, 6)
	require.False(t, g.StartedAt.IsZero())
	require.False(t, g.FinishedAt.Before(g.StartedAt))
	after := map[string][]string{"resize-0": {"fetch"}, "resize-1": {"fetch"}, "resize-2": {"fetch"},
		"album": {"resize-0", "resize-1", "resize-2"}, "mail": {"album"}}
	for task, deps := range after {
		for _, d := range deps {
			require.Less(t, s.index("done:"+d), s.index("start:"+task), "%s started before %s was done", task, d)
		}
	}
	row, err := c.Get(ctx, res.Tasks["album"].ID)
	require.NoError(t, err)
	require.JSONEq(t, `66`, string(row.Result)) // (10+11+12)*2
	eventually(t, func() bool { return len(s.calls("success")) == 1 && len(s.calls("complete")) == 1 }, "callbacks")
	require.Equal(t, []string{res.ID}, s.calls("success"))
	require.Empty(t, s.calls("failure"))

	_, err = sluice.DependencyResult[int](ctx, "album")
	require.ErrorIs(t, err, sluice.ErrNotJobContext)

	list, err := c.ListWorkflows(ctx, &sluice.GroupFilter{Name: "album", Statuses: []sluice.GroupStatus{sluice.GroupCompleted}})
	require.NoError(t, err)
	require.Len(t, list.Groups, 1)
	require.Equal(t, res.ID, list.Groups[0].ID)
	list, err = c.ListWorkflows(ctx, &sluice.GroupFilter{Statuses: []sluice.GroupStatus{sluice.GroupFailed}})
	require.NoError(t, err)
	require.Empty(t, list.Groups)
	batches, err := c.ListBatches(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, batches.Groups)
	tasks, err := c.List(ctx, &sluice.ListFilter{JobFilter: sluice.JobFilter{GroupIDs: []string{strings.ToUpper(res.ID)}}})
	require.NoError(t, err)
	require.Len(t, tasks.Jobs, 6)
}

func TestWorkflowFailsCancelsAndRetries(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testWorkflowFailsCancelsAndRetries[*sql.Tx], testWorkflowFailsCancelsAndRetries[pgx.Tx])
}

func testWorkflowFailsCancelsAndRetries[TTx any](t *testing.T, k *kit[TTx]) {
	ctx := t.Context()
	s := newSteps()
	c := k.client(t, s.config())

	// A resize that fails for good cancels the album and the mail; the
	// workflow fails, and its failure and completion callbacks run once.
	s.setFailing("resize-1", true)
	res, err := c.EnqueueWorkflow(ctx, album("failing", 3, "resize-1"))
	require.NoError(t, err)
	g := waitGroup(t, c.GetWorkflow, res.ID, sluice.GroupFailed)
	require.Equal(t, sluice.OutcomeFailure, g.Outcome)
	require.Equal(t, map[sluice.JobStatus]int{sluice.StatusCompleted: 3, sluice.StatusFailed: 1, sluice.StatusCancelled: 2}, g.Counts)
	eventually(t, func() bool { return len(s.calls("failure")) == 1 && len(s.calls("complete")) == 1 }, "failure callbacks")
	require.Equal(t, -1, s.index("start:album"))

	// Retried: the failed resize runs again, the album and the mail wait
	// for it again, and the graph goes on to success.
	s.setFailing("resize-1", false)
	changed, err := c.RetryWorkflow(ctx, res.ID)
	require.NoError(t, err)
	require.Len(t, changed, 3)
	g = waitGroup(t, c.GetWorkflow, res.ID, sluice.GroupCompleted)
	require.Equal(t, sluice.OutcomeSuccess, g.Outcome)
	require.Less(t, s.index("done:album"), s.index("start:mail"))
	eventually(t, func() bool { return len(s.calls("success")) == 1 && len(s.calls("complete")) == 2 }, "success callbacks")
	require.Len(t, s.calls("failure"), 1)

	// Cancelled while a task runs: the running one's context ends, the
	// waiting ones never run.
	w := sluice.NewWorkflow("cancelled").
		Add("slow", stepArgs{Name: "slow", Block: true}, nil).
		Add("then", stepArgs{Name: "then"}, nil, "slow").
		OnFailure(callbackArgs{On: "cancelled"}, nil)
	res, err = c.EnqueueWorkflow(ctx, w)
	require.NoError(t, err)
	eventually(t, func() bool { return s.index("start:slow") >= 0 }, "slow started")
	cancelled, err := c.CancelWorkflow(ctx, res.ID)
	require.NoError(t, err)
	require.Len(t, cancelled, 2)
	g = waitGroup(t, c.GetWorkflow, res.ID, sluice.GroupFailed)
	require.Equal(t, map[sluice.JobStatus]int{sluice.StatusCancelled: 2}, g.Counts)
	eventually(t, func() bool { return len(s.calls("cancelled")) == 1 }, "cancel callback")
	require.Equal(t, -1, s.index("start:then"))
	require.Equal(t, []string{res.ID}, s.calls("cancelled"))

	// A workflow is not a batch, and IDs that name none are not found.
	_, err = c.CancelBatch(ctx, res.ID)
	require.ErrorIs(t, err, sluice.ErrNotFound)
	_, err = c.AddToBatch(ctx, res.ID, sluice.EnqueueParams{Args: stepArgs{Name: "late"}})
	require.ErrorIs(t, err, sluice.ErrNotFound, "a workflow takes no jobs as a closed batch would refuse them")
	require.NotErrorIs(t, err, sluice.ErrGroupClosed)
	_, err = c.CloseBatch(ctx, res.ID)
	require.ErrorIs(t, err, sluice.ErrNotFound)
	for _, id := range []string{"00000000-0000-0000-0000-000000000000", "not-an-id", ""} {
		_, err = c.GetWorkflow(ctx, id)
		require.ErrorIs(t, err, sluice.ErrNotFound, id)
		_, err = c.RetryWorkflow(ctx, id)
		require.ErrorIs(t, err, sluice.ErrNotFound, id)
		_, err = c.CancelWorkflow(ctx, id)
		require.ErrorIs(t, err, sluice.ErrNotFound, id)
	}
}

func TestWorkflowRefusesBadGraphs(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testWorkflowRefusesBadGraphs[*sql.Tx], testWorkflowRefusesBadGraphs[pgx.Tx])
}

func testWorkflowRefusesBadGraphs[TTx any](t *testing.T, k *kit[TTx]) {
	ctx := t.Context()
	c := k.client(t, nil)
	a := stepArgs{Name: "a"}
	huge := sluice.NewWorkflow("huge")
	for i := range sluice.MaxGroupJobs + 1 {
		huge.Add(fmt.Sprint(i), a, nil)
	}
	cases := []struct {
		w      *sluice.Workflow
		task   string
		reason string
	}{
		{sluice.NewWorkflow("empty"), "", "no task"},
		{huge, "", "more than 10000"},
		{sluice.NewWorkflow("dup").Add("a", a, nil).Add("a", a, nil), "a", "added twice"},
		{sluice.NewWorkflow("unnamed").Add("", a, nil), "task 0", "no name"},
		{sluice.NewWorkflow("missing").Add("a", a, nil, "b"), "a", `"b", which is not a task`},
		{sluice.NewWorkflow("self").Add("a", a, nil, "a"), "a", "cycle"},
		{sluice.NewWorkflow("cycle").Add("x", a, nil).Add("a", a, nil, "x", "c").Add("b", a, nil, "a").Add("c", a, nil, "b"), "", "cycle"},
		{sluice.NewWorkflow("bad\xffname").Add("a", a, nil), "", "UTF-8"},
		{sluice.NewWorkflow("bad task").Add("a\x00", a, nil), "a\x00", "NUL"},
		{sluice.NewWorkflow("unique").Add("a", a, &sluice.EnqueueOptions{UniqueKey: "k"}), "a", "unique key"},
		{sluice.NewWorkflow("depends").Add("a", a, &sluice.EnqueueOptions{DependsOn: []string{"00000000-0000-0000-0000-000000000000"}}), "a", "DependsOn"},
		{sluice.NewWorkflow("policy").Add("a", a, &sluice.EnqueueOptions{OnDependencyFailure: "ignore"}), "a", "OnDependencyFailure"},
		{sluice.NewWorkflow("queue").Add("a", a, &sluice.EnqueueOptions{Queue: "nowhere"}), "a", "unknown queue"},
		{sluice.NewWorkflow("callback").Add("a", a, nil).OnSuccess(callbackArgs{}, &sluice.EnqueueOptions{UniqueKey: "k"}), "OnSuccess[0]", "unique key"},
		{nil, "", "nil workflow"},
	}
	for _, tc := range cases {
		_, err := c.EnqueueWorkflow(ctx, tc.w)
		require.ErrorIs(t, err, sluice.ErrInvalidGroup, "%v", tc)
		var ge *sluice.GroupError
		require.ErrorAs(t, err, &ge)
		if tc.task != "" {
			require.Equal(t, tc.task, ge.Task)
		}
		require.Contains(t, err.Error(), tc.reason)
		switch {
		case strings.HasPrefix(tc.task, "OnSuccess"):
			require.Equal(t, "OnSuccess", ge.Part)
		case tc.task != "":
			require.Equal(t, "Tasks", ge.Part, "%v", tc)
		}
	}
	// The place of the task at fault, by the order added.
	_, err := c.EnqueueWorkflow(ctx, sluice.NewWorkflow("places").Add("a", a, nil).Add("b", a, nil, "a").Add("a", a, nil))
	var ge *sluice.GroupError
	require.ErrorAs(t, err, &ge)
	require.Equal(t, [2]any{"Tasks", 2}, [2]any{ge.Part, ge.Index}, "the second a")
	_, err = c.EnqueueWorkflow(ctx, sluice.NewWorkflow("places").Add("a", a, nil).Add("b", a, nil, "c").Add("c", a, nil, "b"))
	require.ErrorAs(t, err, &ge)
	require.Equal(t, "Tasks", ge.Part)
	require.Contains(t, []int{1, 2}, ge.Index, "a task of the cycle")
	_, err = c.EnqueueWorkflow(ctx, sluice.NewWorkflow("places").Add("a", a, nil).
		OnFailure(callbackArgs{}, nil).OnFailure(callbackArgs{}, &sluice.EnqueueOptions{Queue: "nowhere"}))
	require.ErrorAs(t, err, &ge)
	require.Equal(t, [2]any{"OnFailure", 1}, [2]any{ge.Part, ge.Index})
	require.Zero(t, k.count(t))
	list, err := c.ListWorkflows(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, list.Groups)

	// The most tasks there may be go in one call.
	most := sluice.NewWorkflow("most")
	for i := range sluice.MaxGroupJobs {
		var after []string
		if i > 0 {
			after = []string{fmt.Sprint(i - 1)}
		}
		most.Add(fmt.Sprint(i), a, nil, after...)
	}
	res, err := c.EnqueueWorkflow(ctx, most)
	require.NoError(t, err)
	require.Len(t, res.Tasks, sluice.MaxGroupJobs)
	require.Equal(t, sluice.MaxGroupJobs, k.count(t))
}

func TestBatchCallbacks(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testBatchCallbacks[*sql.Tx], testBatchCallbacks[pgx.Tx])
}

func testBatchCallbacks[TTx any](t *testing.T, k *kit[TTx]) {
	ctx := t.Context()
	s := newSteps()
	c := k.client(t, s.config())

	// Rolled back: nothing.
	tx := k.tx(t)
	_, err := c.EnqueueBatchTx(ctx, tx, sluice.NewBatch("gone").Add(stepArgs{Name: "gone"}, nil))
	require.NoError(t, err)
	k.end(t, tx, false)
	require.Zero(t, k.count(t))

	// Every job completes: success and completion, once each.
	b := sluice.NewBatch("imports").OnSuccess(callbackArgs{On: "success"}, nil).
		OnFailure(callbackArgs{On: "failure"}, nil).OnComplete(callbackArgs{On: "complete"}, nil)
	for i := range 5 {
		b.Add(stepArgs{Name: fmt.Sprint("ok-", i)}, nil)
	}
	ok, err := c.EnqueueBatch(ctx, b)
	require.NoError(t, err)
	require.Len(t, ok.Jobs, 5)
	g := waitGroup(t, c.GetBatch, ok.ID, sluice.GroupCompleted)
	require.Equal(t, map[sluice.JobStatus]int{sluice.StatusCompleted: 5}, g.Counts)
	eventually(t, func() bool { return len(s.calls("success")) == 1 && len(s.calls("complete")) == 1 }, "callbacks")
	require.Equal(t, []string{ok.ID}, s.calls("success"))
	// The batch shows its callbacks: those its outcome enqueued with
	// their jobs, the other without.
	g, err = c.GetBatch(ctx, ok.ID)
	require.NoError(t, err)
	require.Len(t, g.Callbacks, 3)
	for i, on := range []string{"success", "failure", "complete"} {
		cb := g.Callbacks[i]
		require.Equal(t, on, cb.On)
		require.Equal(t, "callback", cb.Topic)
		if on == "failure" {
			require.Nil(t, cb.Job)
			continue
		}
		require.NotNil(t, cb.Job, on)
		require.Equal(t, cb.JobID, cb.Job.ID)
		require.Equal(t, ok.ID, cb.Job.CallbackOf)
	}
	list, err := c.ListBatches(ctx, nil)
	require.NoError(t, err)
	require.Nil(t, list.Groups[0].Callbacks, "not in lists")

	// One fails for good: failure and completion; retried, success.
	s.setFailing("bad", true)
	bad, err := c.EnqueueBatch(ctx, sluice.NewBatch("imports").Add(stepArgs{Name: "fine"}, nil).
		Add(stepArgs{Name: "bad", Fail: true}, nil).
		OnSuccess(callbackArgs{On: "success"}, nil).OnFailure(callbackArgs{On: "failure"}, nil))
	require.NoError(t, err)
	waitGroup(t, c.GetBatch, bad.ID, sluice.GroupFailed)
	eventually(t, func() bool { return len(s.calls("failure")) == 1 }, "failure callback")
	s.setFailing("bad", false)
	retried, err := c.RetryBatch(ctx, bad.ID)
	require.NoError(t, err)
	require.Len(t, retried, 1)
	waitGroup(t, c.GetBatch, bad.ID, sluice.GroupCompleted)
	eventually(t, func() bool { return len(s.calls("success")) == 2 }, "success after retry")
	require.Equal(t, []string{ok.ID, bad.ID}, s.calls("success"))

	// Kept open: jobs are added while it is, the callbacks wait for the
	// close, and a closed batch takes no more.
	open, err := c.EnqueueBatch(ctx, sluice.NewBatch("stream").KeepOpen().OnComplete(callbackArgs{On: "stream"}, nil))
	require.NoError(t, err)
	require.Empty(t, open.Jobs)
	added, err := c.AddToBatch(ctx, open.ID, sluice.EnqueueParams{Args: stepArgs{Name: "s1"}}, sluice.EnqueueParams{Args: stepArgs{Name: "s2"}})
	require.NoError(t, err)
	require.Len(t, added, 2)
	waitFor(t, c, added[1].ID, sluice.StatusCompleted)
	waitFor(t, c, added[0].ID, sluice.StatusCompleted)
	g, err = c.GetBatch(ctx, open.ID)
	require.NoError(t, err)
	require.Equal(t, sluice.GroupOpen, g.Status)
	require.Empty(t, s.calls("stream"))
	closed, err := c.CloseBatch(ctx, open.ID)
	require.NoError(t, err)
	require.Equal(t, sluice.GroupCompleted, closed.Status)
	eventually(t, func() bool { return len(s.calls("stream")) == 1 }, "callback after close")
	_, err = c.AddToBatch(ctx, open.ID, sluice.EnqueueParams{Args: stepArgs{Name: "late"}})
	require.ErrorIs(t, err, sluice.ErrGroupClosed)
	_, err = c.CloseBatch(ctx, open.ID)
	require.NoError(t, err) // closing a closed batch changes nothing
	require.Len(t, s.calls("stream"), 1)

	// Bad batches and IDs.
	before := k.count(t)
	_, err = c.EnqueueBatch(ctx, sluice.NewBatch("empty"))
	require.ErrorIs(t, err, sluice.ErrInvalidGroup)
	_, err = c.EnqueueBatch(ctx, sluice.NewBatch("bad").Add(stepArgs{}, nil).Add(nil, nil))
	var ge *sluice.GroupError
	require.ErrorAs(t, err, &ge)
	require.Equal(t, "job 1", ge.Task)
	require.Equal(t, [2]any{"Jobs", 1}, [2]any{ge.Part, ge.Index})
	_, err = c.AddToBatch(ctx, "00000000-0000-0000-0000-000000000000", sluice.EnqueueParams{Args: stepArgs{}})
	require.ErrorIs(t, err, sluice.ErrNotFound)
	_, err = c.CloseBatch(ctx, "nope")
	require.ErrorIs(t, err, sluice.ErrNotFound)
	require.Equal(t, before, k.count(t))
}

func TestWorkflowTaskStartsWithoutWaitingForThePoll(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testWorkflowTaskStartsWithoutWaitingForThePoll[*sql.Tx], testWorkflowTaskStartsWithoutWaitingForThePoll[pgx.Tx])
}

// A task that finishes asks its client for a release pass, which wakes the
// claim loop of the task after it: a chain runs through with a poll
// interval far longer than the test.
func testWorkflowTaskStartsWithoutWaitingForThePoll[TTx any](t *testing.T, k *kit[TTx]) {
	ctx := t.Context()
	s := newSteps()
	cfg := s.config()
	cfg.PollInterval = time.Hour
	c := k.client(t, cfg)
	w := sluice.NewWorkflow("chain").Add("one", stepArgs{Name: "one"}, nil).
		Add("two", stepArgs{Name: "two"}, nil, "one").
		Add("three", stepArgs{Name: "three"}, nil, "two")
	res, err := c.EnqueueWorkflow(ctx, w)
	require.NoError(t, err)
	waitFor(t, c, res.Tasks["three"].ID, sluice.StatusCompleted)
}

func TestWorkflowFailureCancelsTheRestWithoutWaitingForThePoll(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testWorkflowFailureCancelsTheRestWithoutWaitingForThePoll[*sql.Tx],
		testWorkflowFailureCancelsTheRestWithoutWaitingForThePoll[pgx.Tx])
}

// A task that fails for good has the task after it cancelled by the
// release pass its end asks for, and that cancellation has the task after
// that one cancelled by the next pass: the chain ends, and its workflow
// settles, with a poll interval far longer than the test.
func testWorkflowFailureCancelsTheRestWithoutWaitingForThePoll[TTx any](t *testing.T, k *kit[TTx]) {
	ctx := t.Context()
	s := newSteps()
	cfg := s.config()
	cfg.PollInterval = time.Hour
	c := k.client(t, cfg)
	s.setFailing("one", true)
	w := sluice.NewWorkflow("failing-chain").Add("one", stepArgs{Name: "one", Fail: true}, nil).
		Add("two", stepArgs{Name: "two"}, nil, "one").
		Add("three", stepArgs{Name: "three"}, nil, "two")
	res, err := c.EnqueueWorkflow(ctx, w)
	require.NoError(t, err)
	g := waitGroup(t, c.GetWorkflow, res.ID, sluice.GroupFailed)
	require.Equal(t, map[sluice.JobStatus]int{sluice.StatusFailed: 1, sluice.StatusCancelled: 2}, g.Counts)
	require.Equal(t, -1, s.index("start:two"))
}

func TestEncryptedCallbacksRunAgainAfterARetry(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testEncryptedCallbacksRunAgainAfterARetry[*sql.Tx], testEncryptedCallbacksRunAgainAfterARetry[pgx.Tx])
}

// An encrypted payload is bound to its job's ID: a callback inserted
// again as a new job, after a retry, is encrypted again for its new ID.
func testEncryptedCallbacksRunAgainAfterARetry[TTx any](t *testing.T, k *kit[TTx]) {
	ctx := t.Context()
	s := newSteps()
	cfg := s.config()
	cfg.Encryption = sluice.Encryption{Keys: []sluice.EncryptionKey{key1}, Topics: []string{"callback"}}
	c := k.client(t, cfg)
	s.setFailing("bad", true)
	res, err := c.EnqueueBatch(ctx, sluice.NewBatch("sealed").Add(stepArgs{Name: "bad", Fail: true}, nil).
		OnComplete(callbackArgs{On: "sealed"}, nil))
	require.NoError(t, err)
	waitGroup(t, c.GetBatch, res.ID, sluice.GroupFailed)
	eventually(t, func() bool { return len(s.calls("sealed")) == 1 }, "the first callback")
	s.setFailing("bad", false)
	_, err = c.RetryBatch(ctx, res.ID)
	require.NoError(t, err)
	waitGroup(t, c.GetBatch, res.ID, sluice.GroupCompleted)
	eventually(t, func() bool { return len(s.calls("sealed")) == 2 }, "the callback after the retry")
	list, err := c.List(ctx, &sluice.ListFilter{JobFilter: sluice.JobFilter{Topics: []string{"callback"}}})
	require.NoError(t, err)
	require.Len(t, list.Jobs, 2)
	for _, row := range list.Jobs {
		_, sealed := sluice.PayloadKeyID(row)
		require.True(t, sealed)
		waitFor(t, c, row.ID, sluice.StatusCompleted)
	}
}
