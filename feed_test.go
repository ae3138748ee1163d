package sluice_test

import (
	"context"
	"database/sql"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
)

// quickFeed reads every 20 ms, looks 2 s back, and stops with its last
// subscriber.
func quickFeed() sluice.ChangeFeedConfig {
	return sluice.ChangeFeedConfig{Interval: 20 * time.Millisecond, Lag: 2 * time.Second, Linger: -1}
}

// watch subscribes to c's feed with opts until the test ends.
func watch[TTx any](t *testing.T, c *sluice.Client[TTx], opts *sluice.WatchOptions) *sluice.ChangeSubscription {
	t.Helper()
	sub, err := c.Watch(t.Context(), opts)
	require.NoError(t, err)
	t.Cleanup(sub.Close)
	return sub
}

// nextChange returns the next change sub receives, within 10 s.
func nextChange(t *testing.T, sub *sluice.ChangeSubscription) sluice.Change {
	t.Helper()
	select {
	case ch, ok := <-sub.C:
		require.True(t, ok, "subscription closed")
		return ch
	case <-time.After(10 * time.Second):
		require.FailNow(t, "no change within 10 s")
	}
	return sluice.Change{}
}

// awaitChange returns the first change sub receives of kind for job id
// (any job when id is empty), skipping others.
func awaitChange(t *testing.T, sub *sluice.ChangeSubscription, id string, kind sluice.ChangeKind) sluice.Change {
	t.Helper()
	for {
		ch := nextChange(t, sub)
		if ch.Kind == kind && (id == "" || ch.Job != nil && ch.Job.ID == id) {
			return ch
		}
	}
}

func TestWatchReportsWhatOtherClientsDo(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testWatchReportsWhatOtherClientsDo[*sql.Tx], testWatchReportsWhatOtherClientsDo[pgx.Tx])
}

func testWatchReportsWhatOtherClientsDo[TTx any](t *testing.T, k *kit[TTx]) {
	watcher := k.client(t, &sluice.Config{ChangeFeed: quickFeed()})
	sub := watch(t, watcher, nil)

	// Another client, as another process would: none of its writes goes
	// through the watcher.
	report, release := make(chan struct{}), make(chan struct{})
	worker := k.client(t, &sluice.Config{Workers: workers(func(ctx context.Context, job *sluice.Job[noteArgs]) error {
		if job.Args.N == 1 {
			<-report
			if err := sluice.ReportProgress(ctx, 50, "half"); err != nil {
				return err
			}
			<-release
		}
		return nil
	}), ProgressInterval: 10 * time.Millisecond})
	res, err := worker.Enqueue(t.Context(), noteArgs{N: 1}, nil)
	require.NoError(t, err)
	id := res.Job.ID
	started := awaitChange(t, sub, id, sluice.ChangeStarted)
	require.Equal(t, sluice.StatusProcessing, started.Job.Status)
	require.Equal(t, 1, started.Job.Attempt)
	require.NotEmpty(t, started.ID)
	close(report)
	progressed := awaitChange(t, sub, id, sluice.ChangeProgressed)
	require.Equal(t, 50.0, progressed.Job.Progress.Percent)
	close(release)
	done := awaitChange(t, sub, id, sluice.ChangeCompleted)
	require.Equal(t, sluice.StatusCompleted, done.Job.Status)
	require.False(t, done.At.IsZero())

	// A pending job cancelled by another client, due later so nobody
	// claims it first.
	later := &sluice.EnqueueOptions{RunAt: time.Now().Add(time.Hour)}
	res, err = worker.Enqueue(t.Context(), noteArgs{N: 2}, later)
	require.NoError(t, err)
	awaitChange(t, sub, res.Job.ID, sluice.ChangeEnqueued)
	_, err = worker.Cancel(t.Context(), res.Job.ID)
	require.NoError(t, err)
	awaitChange(t, sub, res.Job.ID, sluice.ChangeCancelled)

	// What the watcher itself does is reported at once, deletes included.
	_, err = watcher.Requeue(t.Context(), res.Job.ID)
	require.NoError(t, err)
	requeued := awaitChange(t, sub, res.Job.ID, sluice.ChangeRequeued)
	require.Equal(t, sluice.StatusPending, requeued.Job.Status)
	_, err = watcher.Cancel(t.Context(), res.Job.ID)
	require.NoError(t, err)
	awaitChange(t, sub, res.Job.ID, sluice.ChangeCancelled)
	_, err = watcher.Delete(t.Context(), res.Job.ID)
	require.NoError(t, err)
	awaitChange(t, sub, res.Job.ID, sluice.ChangeDeleted)
}

func TestWatchReportsLogsOfRunningJobs(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testWatchReportsLogsOfRunningJobs[*sql.Tx], testWatchReportsLogsOfRunningJobs[pgx.Tx])
}

// testWatchReportsLogsOfRunningJobs: records another client's worker logs
// are reported as a change once that client stores them: logged while
// the progress stays, with how many records the job has logged.
func testWatchReportsLogsOfRunningJobs[TTx any](t *testing.T, k *kit[TTx]) {
	watcher := k.client(t, &sluice.Config{ChangeFeed: quickFeed()})
	sub := watch(t, watcher, nil)
	step, release := make(chan struct{}), make(chan struct{})
	worker := k.client(t, &sluice.Config{Workers: workers(func(ctx context.Context, job *sluice.Job[noteArgs]) error {
		<-step
		sluice.Logger(ctx).Info("one")
		<-step
		if err := sluice.ReportProgress(ctx, 50, "half"); err != nil {
			return err
		}
		<-step
		sluice.Logger(ctx).Info("two")
		sluice.Logger(ctx).Warn("three")
		<-release
		return nil
	}), ProgressInterval: 10 * time.Millisecond})
	res, err := worker.Enqueue(t.Context(), noteArgs{N: 1}, nil)
	require.NoError(t, err)
	id := res.Job.ID
	require.Zero(t, awaitChange(t, sub, id, sluice.ChangeStarted).Job.Logged)
	step <- struct{}{}
	require.Equal(t, 1, awaitChange(t, sub, id, sluice.ChangeLogged).Job.Logged)
	step <- struct{}{}
	progressed := awaitChange(t, sub, id, sluice.ChangeProgressed)
	require.Equal(t, 1, progressed.Job.Logged, "the progress alone changed")
	step <- struct{}{}
	logged := awaitChange(t, sub, id, sluice.ChangeLogged)
	if logged.Job.Logged == 2 { // stored between the two records
		logged = awaitChange(t, sub, id, sluice.ChangeLogged)
	}
	require.Equal(t, 3, logged.Job.Logged)
	require.Equal(t, 50.0, logged.Job.Progress.Percent)
	close(release)
	done := awaitChange(t, sub, id, sluice.ChangeCompleted)
	require.Equal(t, 3, done.Job.Logged, "kept with the outcome")
	job, err := watcher.Get(t.Context(), id)
	require.NoError(t, err)
	require.Len(t, job.Logs, 3)
}

func TestWatchReportsRequeuesAndDeletesByOtherClients(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testWatchReportsRequeuesAndDeletesByOtherClients[*sql.Tx], testWatchReportsRequeuesAndDeletesByOtherClients[pgx.Tx])
}

func testWatchReportsRequeuesAndDeletesByOtherClients[TTx any](t *testing.T, k *kit[TTx]) {
	watcher := k.client(t, &sluice.Config{ChangeFeed: quickFeed()})
	sub := watch(t, watcher, nil)
	other := k.client(t, nil)
	res, err := other.Enqueue(t.Context(), noteArgs{}, &sluice.EnqueueOptions{RunAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	id := res.Job.ID
	_, err = other.Cancel(t.Context(), id)
	require.NoError(t, err)
	awaitChange(t, sub, id, sluice.ChangeCancelled)
	// Neither leaves a trace an index of the jobs table shows: the log of
	// actions tells.
	_, err = other.Requeue(t.Context(), id)
	require.NoError(t, err)
	requeued := awaitChange(t, sub, id, sluice.ChangeRequeued)
	require.Equal(t, sluice.StatusPending, requeued.Job.Status)
	_, err = other.Delete(t.Context(), id)
	require.NoError(t, err)
	deleted := awaitChange(t, sub, id, sluice.ChangeDeleted)
	require.Equal(t, "note", deleted.Job.Topic)
}

func TestWatchReportsItsClientsRequeueOfAJobFinishedLongAgo(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testWatchReportsItsClientsRequeueOfAJobFinishedLongAgo[*sql.Tx],
		testWatchReportsItsClientsRequeueOfAJobFinishedLongAgo[pgx.Tx])
}

func testWatchReportsItsClientsRequeueOfAJobFinishedLongAgo[TTx any](t *testing.T, k *kit[TTx]) {
	// The jobs were cancelled before the feed started, longer ago than it
	// looks back: the feed never saw them finish.
	other := k.client(t, nil)
	var ids []string
	for _, key := range []string{"one", "many"} {
		res, err := other.Enqueue(t.Context(), noteArgs{}, &sluice.EnqueueOptions{RunAt: time.Now().Add(time.Hour), UniqueKey: key})
		require.NoError(t, err)
		_, err = other.Cancel(t.Context(), res.Job.ID)
		require.NoError(t, err)
		ids = append(ids, res.Job.ID)
	}
	time.Sleep(50 * time.Millisecond) // more than the lag below
	feed := sluice.ChangeFeedConfig{Interval: 10 * time.Millisecond, Lag: 10 * time.Millisecond, Linger: -1}
	watcher := k.client(t, &sluice.Config{ChangeFeed: feed})
	sub := watch(t, watcher, nil)
	_, err := watcher.Requeue(t.Context(), ids[0])
	require.NoError(t, err)
	_, err = watcher.RequeueMany(t.Context(), &sluice.JobFilter{UniqueKey: "many"})
	require.NoError(t, err)
	for _, id := range ids {
		ch := nextChange(t, sub)
		require.Equal(t, id, ch.Job.ID)
		require.Equal(t, sluice.ChangeRequeued, ch.Kind)
	}
}

func TestWatchReportsEachChangeOnce(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testWatchReportsEachChangeOnce[*sql.Tx], testWatchReportsEachChangeOnce[pgx.Tx])
}

func testWatchReportsEachChangeOnce[TTx any](t *testing.T, k *kit[TTx]) {
	watcher := k.client(t, &sluice.Config{ChangeFeed: quickFeed()})
	sub := watch(t, watcher, nil)
	other := k.client(t, nil)
	var ids []string
	for n := range 5 {
		res, err := other.Enqueue(t.Context(), noteArgs{N: n}, &sluice.EnqueueOptions{RunAt: time.Now().Add(time.Hour)})
		require.NoError(t, err)
		ids = append(ids, res.Job.ID)
	}
	seen := map[string]int{}
	for len(seen) < len(ids) {
		ch := nextChange(t, sub)
		require.Equal(t, sluice.ChangeEnqueued, ch.Kind)
		seen[ch.Job.ID]++
	}
	// Later reads look back over the lag and find the same jobs, which
	// are not reported again.
	time.Sleep(400 * time.Millisecond)
	select {
	case ch := <-sub.C:
		require.Failf(t, "reported twice", "%+v", ch)
	default:
	}
}

func TestWatchFilters(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testWatchFilters[*sql.Tx], testWatchFilters[pgx.Tx])
}

func testWatchFilters[TTx any](t *testing.T, k *kit[TTx]) {
	c := k.client(t, &sluice.Config{ChangeFeed: quickFeed()})
	later := &sluice.EnqueueOptions{RunAt: time.Now().Add(time.Hour)}
	first, err := c.Enqueue(t.Context(), noteArgs{N: 1}, later)
	require.NoError(t, err)
	byID := watch(t, c, &sluice.WatchOptions{IDs: []string{first.Job.ID}})
	byTopic := watch(t, c, &sluice.WatchOptions{Topics: []string{"other"}})
	_, err = c.Enqueue(t.Context(), noteArgs{N: 2}, later)
	require.NoError(t, err)
	other, err := c.Enqueue(t.Context(), otherArgs{}, later)
	require.NoError(t, err)
	_, err = c.Cancel(t.Context(), first.Job.ID)
	require.NoError(t, err)

	ch := nextChange(t, byID)
	require.Equal(t, first.Job.ID, ch.Job.ID)
	require.Equal(t, sluice.ChangeCancelled, ch.Kind)
	ch = nextChange(t, byTopic)
	require.Equal(t, other.Job.ID, ch.Job.ID)
	require.Equal(t, sluice.ChangeEnqueued, ch.Kind)
}

func TestWatchResumesAfterAChange(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testWatchResumesAfterAChange[*sql.Tx], testWatchResumesAfterAChange[pgx.Tx])
}

func testWatchResumesAfterAChange[TTx any](t *testing.T, k *kit[TTx]) {
	c := k.client(t, &sluice.Config{ChangeFeed: quickFeed()})
	keep := watch(t, c, nil) // keeps the feed running between the others
	later := &sluice.EnqueueOptions{RunAt: time.Now().Add(time.Hour)}

	first := watch(t, c, nil)
	_, err := c.Enqueue(t.Context(), noteArgs{N: 1}, later)
	require.NoError(t, err)
	seen := nextChange(t, first)
	first.Close()
	var missed []string
	for n := range 3 {
		res, err := c.Enqueue(t.Context(), noteArgs{N: 10 + n}, later)
		require.NoError(t, err)
		missed = append(missed, res.Job.ID)
	}
	var latest sluice.Change
	for range 4 {
		latest = nextChange(t, keep)
	}

	// A subscriber that stops before its first change resumes after its
	// Start.
	idle := watch(t, c, nil)
	require.Equal(t, latest.ID, idle.Start)
	idle.Close()
	res, err := c.Enqueue(t.Context(), noteArgs{N: 20}, later)
	require.NoError(t, err)
	require.Equal(t, res.Job.ID, nextChange(t, watch(t, c, &sluice.WatchOptions{After: idle.Start})).Job.ID)

	resumed := watch(t, c, &sluice.WatchOptions{After: seen.ID})
	for _, id := range missed {
		ch := nextChange(t, resumed)
		require.Equal(t, sluice.ChangeEnqueued, ch.Kind)
		require.Equal(t, id, ch.Job.ID)
	}

	for _, after := range []string{"unknown-1", "x", seen.ID + "0"} {
		reset := watch(t, c, &sluice.WatchOptions{After: after})
		ch := nextChange(t, reset)
		require.Equal(t, sluice.ChangeReset, ch.Kind, "after %q", after)
		require.Nil(t, ch.Job)
	}
}

func TestWatchResyncsWhenTooMuchChanged(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testWatchResyncsWhenTooMuchChanged[*sql.Tx], testWatchResyncsWhenTooMuchChanged[pgx.Tx])
}

func testWatchResyncsWhenTooMuchChanged[TTx any](t *testing.T, k *kit[TTx]) {
	cfg := quickFeed()
	cfg.MaxRows = 2
	watcher := k.client(t, &sluice.Config{ChangeFeed: cfg})
	sub := watch(t, watcher, nil)
	other := k.client(t, nil)
	params := make([]sluice.EnqueueParams, 5)
	for i := range params {
		params[i] = sluice.EnqueueParams{Args: noteArgs{N: i}}
	}
	_, err := other.EnqueueMany(t.Context(), params)
	require.NoError(t, err)
	ch := nextChange(t, sub)
	require.Equal(t, sluice.ChangeResync, ch.Kind)
	require.Nil(t, ch.Job)
}

func TestWatchDropsForSlowSubscribersAndResyncsThem(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testWatchDropsForSlowSubscribersAndResyncsThem[*sql.Tx], testWatchDropsForSlowSubscribersAndResyncsThem[pgx.Tx])
}

func testWatchDropsForSlowSubscribersAndResyncsThem[TTx any](t *testing.T, k *kit[TTx]) {
	c := k.client(t, &sluice.Config{ChangeFeed: quickFeed()})
	sub := watch(t, c, &sluice.WatchOptions{Buffer: 1})
	later := &sluice.EnqueueOptions{RunAt: time.Now().Add(time.Hour)}
	for n := range 3 {
		_, err := c.Enqueue(t.Context(), noteArgs{N: n}, later)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return sub.Dropped() >= 2 }, 5*time.Second, 5*time.Millisecond)
	require.Equal(t, sluice.ChangeEnqueued, nextChange(t, sub).Kind)
	_, err := c.Enqueue(t.Context(), noteArgs{N: 9}, later)
	require.NoError(t, err)
	require.Equal(t, sluice.ChangeResync, nextChange(t, sub).Kind)
}

// countingDriver is a driver with its JobChanges calls counted.
type countingDriver[TTx any] struct {
	driver.Driver[TTx]
	reads *atomic.Int64
}

func (d countingDriver[TTx]) Executor() driver.Executor {
	return countingExecutor{Executor: d.Driver.Executor(), reads: d.reads}
}

type countingExecutor struct {
	driver.Executor
	reads *atomic.Int64
}

func (e countingExecutor) JobChanges(ctx context.Context, p *driver.JobChangesParams) (*driver.JobChanges, error) {
	e.reads.Add(1)
	return e.Executor.JobChanges(ctx, p)
}

func TestWatchReadsOncePerIntervalHoweverManySubscribe(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testWatchReadsOncePerIntervalHoweverManySubscribe[*sql.Tx], testWatchReadsOncePerIntervalHoweverManySubscribe[pgx.Tx])
}

func testWatchReadsOncePerIntervalHoweverManySubscribe[TTx any](t *testing.T, k *kit[TTx]) {
	reads := &atomic.Int64{}
	cfg := quickFeed()
	cfg.Interval = 50 * time.Millisecond
	c, err := sluice.NewClient(countingDriver[TTx]{Driver: k.driver, reads: reads}, &sluice.Config{Logger: quiet, ChangeFeed: cfg})
	require.NoError(t, err)
	start := time.Now()
	for range 100 {
		watch(t, c, nil)
	}
	time.Sleep(500 * time.Millisecond)
	elapsed := time.Since(start)
	// Each interval counts what changed, then reads it: two calls.
	require.LessOrEqual(t, reads.Load(), 2*(int64(elapsed/cfg.Interval)+1), "two calls per interval for 100 subscribers")
	require.GreaterOrEqual(t, reads.Load(), int64(3))
}

func TestWatchStopsWithItsLastSubscriber(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testWatchStopsWithItsLastSubscriber[*sql.Tx], testWatchStopsWithItsLastSubscriber[pgx.Tx])
}

func testWatchStopsWithItsLastSubscriber[TTx any](t *testing.T, k *kit[TTx]) {
	reads := &atomic.Int64{}
	c, err := sluice.NewClient(countingDriver[TTx]{Driver: k.driver, reads: reads}, &sluice.Config{Logger: quiet, ChangeFeed: quickFeed()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	_, err = c.Watch(ctx, nil)
	require.NoError(t, err)
	sub := watch(t, c, nil)
	cancel() // ends the first subscription
	sub.Close()
	n := reads.Load()
	time.Sleep(100 * time.Millisecond)
	require.Equal(t, n, reads.Load(), "no read after the last subscription closed")

	_, err = c.Watch(cancelled(t), nil)
	require.ErrorIs(t, err, context.Canceled)
}

func TestChangeFeedConfigIsValidated(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testChangeFeedConfigIsValidated[*sql.Tx], testChangeFeedConfigIsValidated[pgx.Tx])
}

func testChangeFeedConfigIsValidated[TTx any](t *testing.T, k *kit[TTx]) {
	for field, cfg := range map[string]sluice.ChangeFeedConfig{
		"ChangeFeed.Interval": {Interval: time.Millisecond},
		"ChangeFeed.Lag":      {Interval: time.Second, Lag: time.Millisecond},
		"ChangeFeed.MaxRows":  {MaxRows: -1},
		"ChangeFeed.History":  {History: -1},
	} {
		_, err := sluice.NewClient(k.driver, &sluice.Config{ChangeFeed: cfg})
		var ce *sluice.ConfigError
		require.ErrorAs(t, err, &ce, field)
		require.Equal(t, field, ce.Field)
	}
	_, err := sluice.NewClient(k.driver, &sluice.Config{ChangeFeed: sluice.ChangeFeedConfig{Interval: 10 * time.Second}})
	require.NoError(t, err, "the default lag grows with a long interval")
}

// cancelled returns a context that has ended.
func cancelled(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	return ctx
}
