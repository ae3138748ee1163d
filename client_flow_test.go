package sluice_test

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

// flowConfig is the config of a client working noteArgs with work, polling
// every 10 ms, with maxWorkers workers on the default queue.
func flowConfig(maxWorkers int, work func(ctx context.Context, job *sluice.Job[noteArgs]) error) *sluice.Config {
	return &sluice.Config{
		Workers:      workers(work),
		Queues:       map[string]sluice.QueueConfig{sluice.QueueDefault: {MaxWorkers: maxWorkers}},
		PollInterval: 10 * time.Millisecond,
	}
}

func TestPauseQueueAcrossClients(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testPauseQueueAcrossClients[*sql.Tx], testPauseQueueAcrossClients[pgx.Tx])
}

func testPauseQueueAcrossClients[TTx any](t *testing.T, k *kit[TTx]) {
	ctx := t.Context()
	block := make(chan struct{})
	k.client(t, flowConfig(2, func(ctx context.Context, job *sluice.Job[noteArgs]) error {
		if job.Args.N == 1 {
			<-block
		}
		return nil
	}))
	// Another client, with no workers, pauses the queue the first works.
	admin := startClient(t, k.deaf(), nil)
	running, err := admin.Enqueue(ctx, noteArgs{N: 1}, nil)
	require.NoError(t, err)
	waitFor(t, admin, running.Job.ID, sluice.StatusProcessing)

	st, err := admin.PauseQueue(ctx, sluice.QueueDefault)
	require.NoError(t, err)
	require.True(t, st.Paused)
	states, err := admin.QueueStates(ctx)
	require.NoError(t, err)
	require.Len(t, states, 1)
	require.True(t, states[0].Paused)
	stats, err := admin.Stats(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, []string{sluice.QueueDefault}, stats.Paused)

	// The worker's client reads the queue states every 50 ms (its poll
	// interval, 10 ms, raised to the least interval of that loop).
	time.Sleep(150 * time.Millisecond)
	waiting, err := admin.Enqueue(ctx, noteArgs{N: 2}, nil)
	require.NoError(t, err)
	close(block) // the running job finishes while the queue is paused
	waitFor(t, admin, running.Job.ID, sluice.StatusCompleted)
	never(t, func() bool {
		row, err := admin.Get(ctx, waiting.Job.ID)
		require.NoError(t, err)
		return row.Status != sluice.StatusPending
	}, 200*time.Millisecond, 10*time.Millisecond, "a job of a paused queue started")

	st, err = admin.ResumeQueue(ctx, sluice.QueueDefault)
	require.NoError(t, err)
	require.False(t, st.Paused)
	waitFor(t, admin, waiting.Job.ID, sluice.StatusCompleted)
}

func TestQueueMaxRunningAcrossClients(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testQueueMaxRunningAcrossClients[*sql.Tx], testQueueMaxRunningAcrossClients[pgx.Tx])
}

func testQueueMaxRunningAcrossClients[TTx any](t *testing.T, k *kit[TTx]) {
	ctx := t.Context()
	admin := startClient(t, k.deaf(), nil)
	_, err := admin.SetQueueLimits(ctx, sluice.QueueDefault, sluice.QueueLimits{MaxRunning: 2})
	require.NoError(t, err)
	var running, most atomic.Int32
	work := func(ctx context.Context, job *sluice.Job[noteArgs]) error {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(5 * time.Millisecond)
		running.Add(-1)
		return nil
	}
	// Three clients of four workers each, on drivers of their own.
	for range 3 {
		startClient(t, k.deaf(), flowConfig(4, work))
	}
	params := make([]sluice.EnqueueParams, 30)
	for i := range params {
		params[i] = sluice.EnqueueParams{Args: noteArgs{N: i}}
	}
	res, err := admin.EnqueueMany(ctx, params)
	require.NoError(t, err)
	for _, r := range res {
		waitFor(t, admin, r.Job.ID, sluice.StatusCompleted)
	}
	require.LessOrEqual(t, most.Load(), int32(2), "jobs running at once")
	require.Equal(t, int32(2), most.Load(), "the limit was never reached")
}

func TestQueueRateLimit(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testQueueRateLimit[*sql.Tx], testQueueRateLimit[pgx.Tx])
}

func testQueueRateLimit[TTx any](t *testing.T, k *kit[TTx]) {
	ctx := t.Context()
	admin := startClient(t, k.deaf(), nil)
	st, err := admin.SetQueueLimits(ctx, sluice.QueueDefault, sluice.QueueLimits{RateLimit: 3, RatePeriod: time.Hour})
	require.NoError(t, err)
	require.Equal(t, 3, st.RateLimit)
	var done atomic.Int32
	for range 2 {
		startClient(t, k.deaf(), flowConfig(4, func(context.Context, *sluice.Job[noteArgs]) error {
			done.Add(1)
			return nil
		}))
	}
	for i := range 5 {
		_, err := admin.Enqueue(ctx, noteArgs{N: i}, nil)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return done.Load() == 3 }, 10*time.Second, 5*time.Millisecond)
	never(t, func() bool { return done.Load() > 3 }, 200*time.Millisecond, 10*time.Millisecond, "rate limit exceeded")

	// Bad limits are refused and change nothing.
	for _, l := range []sluice.QueueLimits{{MaxRunning: -1}, {RateLimit: 2}, {RatePeriod: time.Second}} {
		_, err := admin.SetQueueLimits(ctx, sluice.QueueDefault, l)
		var oe *sluice.OptionsError
		require.ErrorAs(t, err, &oe, "%+v", l)
	}
	_, err = admin.PauseQueue(ctx, "no spaces")
	var oe *sluice.OptionsError
	require.ErrorAs(t, err, &oe)
	states, err := admin.QueueStates(ctx)
	require.NoError(t, err)
	require.Len(t, states, 1)
	require.Equal(t, 3, states[0].RateLimit)
}

func TestDependsOn(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testDependsOn[*sql.Tx], testDependsOn[pgx.Tx])
}

func testDependsOn[TTx any](t *testing.T, k *kit[TTx]) {
	ctx := t.Context()
	var (
		mu    sync.Mutex
		order []int
	)
	c := k.client(t, flowConfig(4, func(ctx context.Context, job *sluice.Job[noteArgs]) error {
		if job.Args.N < 0 {
			return sluice.Cancel(context.Canceled)
		}
		mu.Lock()
		order = append(order, job.Args.N)
		mu.Unlock()
		return nil
	}))
	// A chain, enqueued in one transaction: backup (1) → check (2) → compact (3).
	tx := k.tx(t)
	backup, err := c.EnqueueTx(ctx, tx, noteArgs{N: 1}, nil)
	require.NoError(t, err)
	check, err := c.EnqueueTx(ctx, tx, noteArgs{N: 2}, &sluice.EnqueueOptions{DependsOn: []string{backup.Job.ID}})
	require.NoError(t, err)
	require.True(t, check.Job.Waiting)
	require.Equal(t, []string{backup.Job.ID}, check.Job.DependsOn)
	compact, err := c.EnqueueTx(ctx, tx, noteArgs{N: 3}, &sluice.EnqueueOptions{DependsOn: []string{check.Job.ID, backup.Job.ID}})
	require.NoError(t, err)
	k.end(t, tx, true)
	last := waitFor(t, c, compact.Job.ID, sluice.StatusCompleted)
	require.False(t, last.Waiting)
	mu.Lock()
	require.Equal(t, []int{1, 2, 3}, order)
	mu.Unlock()

	// A dependency cancelled by its worker cancels its dependents, and
	// theirs in turn; a dependent of policy run runs anyway.
	failing, err := c.Enqueue(ctx, noteArgs{N: -1}, nil)
	require.NoError(t, err)
	cancelled, err := c.Enqueue(ctx, noteArgs{N: 4}, &sluice.EnqueueOptions{DependsOn: []string{failing.Job.ID}})
	require.NoError(t, err)
	cascaded, err := c.Enqueue(ctx, noteArgs{N: 5}, &sluice.EnqueueOptions{DependsOn: []string{cancelled.Job.ID}})
	require.NoError(t, err)
	anyway, err := c.Enqueue(ctx, noteArgs{N: 6}, &sluice.EnqueueOptions{
		DependsOn: []string{failing.Job.ID}, OnDependencyFailure: sluice.DependencyRun})
	require.NoError(t, err)
	row := waitFor(t, c, cancelled.Job.ID, sluice.StatusCancelled)
	require.Equal(t, "dependency "+failing.Job.ID+" cancelled", row.Errors[len(row.Errors)-1].Error)
	row = waitFor(t, c, cascaded.Job.ID, sluice.StatusCancelled)
	require.Equal(t, "dependency "+cancelled.Job.ID+" cancelled", row.Errors[len(row.Errors)-1].Error)
	waitFor(t, c, anyway.Job.ID, sluice.StatusCompleted)
	mu.Lock()
	require.Equal(t, []int{1, 2, 3, 6}, order)
	mu.Unlock()

	// Bad dependencies are refused, and nothing is written.
	before := k.count(t)
	for _, opts := range []*sluice.EnqueueOptions{
		{DependsOn: []string{"not-an-id"}},
		{DependsOn: []string{backup.Job.ID}, OnDependencyFailure: "ignore"},
		{OnDependencyFailure: sluice.DependencyRun},
	} {
		_, err := c.Enqueue(ctx, noteArgs{}, opts)
		var oe *sluice.OptionsError
		require.ErrorAs(t, err, &oe, "%+v", opts)
	}
	require.Equal(t, before, k.count(t))
}

func TestExplainFlow(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testExplainFlow[*sql.Tx], testExplainFlow[pgx.Tx])
}

func testExplainFlow[TTx any](t *testing.T, k *kit[TTx]) {
	ctx := t.Context()
	block := make(chan struct{})
	defer close(block)
	c := k.client(t, flowConfig(4, func(ctx context.Context, job *sluice.Job[noteArgs]) error {
		select {
		case <-block:
		case <-ctx.Done():
		}
		return nil
	}))
	_, err := c.SetQueueLimits(ctx, sluice.QueueDefault, sluice.QueueLimits{MaxRunning: 1})
	require.NoError(t, err)
	first, err := c.Enqueue(ctx, noteArgs{N: 1}, nil)
	require.NoError(t, err)
	waitFor(t, c, first.Job.ID, sluice.StatusProcessing)
	second, err := c.Enqueue(ctx, noteArgs{N: 2}, nil)
	require.NoError(t, err)
	ex, err := c.Explain(ctx, second.Job.ID)
	require.NoError(t, err)
	require.Equal(t, sluice.ReasonQueueLimit, ex.Reason, ex.Text)

	_, err = c.PauseQueue(ctx, sluice.QueueDefault)
	require.NoError(t, err)
	ex, err = c.Explain(ctx, second.Job.ID)
	require.NoError(t, err)
	require.Equal(t, sluice.ReasonPaused, ex.Reason, ex.Text)

	later, err := c.Enqueue(ctx, noteArgs{N: 3}, &sluice.EnqueueOptions{RunAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	waiting, err := c.Enqueue(ctx, noteArgs{N: 4}, &sluice.EnqueueOptions{DependsOn: []string{later.Job.ID}})
	require.NoError(t, err)
	ex, err = c.Explain(ctx, waiting.Job.ID)
	require.NoError(t, err)
	require.Equal(t, sluice.ReasonWaiting, ex.Reason, ex.Text)
	require.Contains(t, ex.Text, later.Job.ID)
	// RetryNow leaves a waiting job waiting.
	row, err := c.RetryNow(ctx, waiting.Job.ID)
	require.NoError(t, err)
	require.True(t, row.Waiting)
	ex, err = c.Explain(ctx, waiting.Job.ID)
	require.NoError(t, err)
	require.Equal(t, sluice.ReasonWaiting, ex.Reason, ex.Text)
}
