package sluice_test

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

// requireConflict requires err to be a StatusConflictError naming status.
func requireConflict(t *testing.T, err error, status sluice.JobStatus) {
	t.Helper()
	require.ErrorIs(t, err, sluice.ErrStatusConflict)
	var se *sluice.StatusConflictError
	require.True(t, errors.As(err, &se))
	require.Equal(t, status, se.Status)
}

func TestCancelPendingJob(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testCancelPendingJob[*sql.Tx], testCancelPendingJob[pgx.Tx])
}

func testCancelPendingJob[TTx any](t *testing.T, k *kit[TTx]) {
	c := k.client(t, nil)
	res, err := c.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)

	row, err := c.Cancel(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, sluice.StatusCancelled, row.Status)
	require.False(t, row.FinalizedAt.IsZero())

	// A finished job, or an unknown one, is refused and left as it is.
	_, err = c.Cancel(t.Context(), res.Job.ID)
	requireConflict(t, err, sluice.StatusCancelled)
	_, err = c.Cancel(t.Context(), "0190f5d2-0000-7000-8000-000000000001")
	require.ErrorIs(t, err, sluice.ErrNotFound)
	got, err := c.Get(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, row, got)
}

func TestCancelTxCommitsWithTheTransaction(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testCancelTxCommitsWithTheTransaction[*sql.Tx], testCancelTxCommitsWithTheTransaction[pgx.Tx])
}

func testCancelTxCommitsWithTheTransaction[TTx any](t *testing.T, k *kit[TTx]) {
	c := k.client(t, nil)
	res, err := c.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	for _, commit := range []bool{false, true} {
		tx := k.tx(t)
		_, err = c.CancelTx(t.Context(), tx, res.Job.ID)
		require.NoError(t, err)
		k.end(t, tx, commit)
		got, err := c.Get(t.Context(), res.Job.ID)
		require.NoError(t, err)
		want := sluice.StatusPending
		if commit {
			want = sluice.StatusCancelled
		}
		require.Equal(t, want, got.Status, "commit %v", commit)
	}
	var nilTx TTx
	_, err = c.CancelTx(t.Context(), nilTx, res.Job.ID)
	require.ErrorIs(t, err, sluice.ErrNilTx)
	_, err = c.RequeueManyTx(t.Context(), nilTx, &sluice.JobFilter{Topics: []string{"note"}})
	require.ErrorIs(t, err, sluice.ErrNilTx)
}

// blockingWorkers returns workers whose job blocks until its context ends,
// and reports the context's cause on causes; started receives each job's
// ID once it runs.
func blockingWorkers(started chan<- string, causes chan<- error) *sluice.Workers {
	return workers(func(ctx context.Context, job *sluice.Job[noteArgs]) error {
		started <- job.ID
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	})
}

func TestCancelRunningJobStopsItsWorker(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testCancelRunningJobStopsItsWorker[*sql.Tx], testCancelRunningJobStopsItsWorker[pgx.Tx])
}

func testCancelRunningJobStopsItsWorker[TTx any](t *testing.T, k *kit[TTx]) {
	started, causes := make(chan string, 2), make(chan error, 2)
	c := k.client(t, &sluice.Config{Workers: blockingWorkers(started, causes)})
	// Another client on the same database, as another process would be.
	other := k.client(t, nil)

	for _, canceller := range []*sluice.Client[TTx]{c, other} {
		res, err := canceller.Enqueue(t.Context(), noteArgs{}, nil)
		require.NoError(t, err)
		require.Equal(t, res.Job.ID, <-started)
		row, err := canceller.Cancel(t.Context(), res.Job.ID)
		require.NoError(t, err)
		require.Equal(t, sluice.StatusCancelled, row.Status)
		select {
		case cause := <-causes:
			require.ErrorIs(t, cause, sluice.ErrLeaseLost)
		case <-time.After(10 * time.Second):
			t.Fatal("the worker's context was not cancelled")
		}
		// The worker's outcome is not recorded: the job stays cancelled.
		never(t, func() bool {
			got, err := c.Get(t.Context(), res.Job.ID)
			require.NoError(t, err)
			return got.Status != sluice.StatusCancelled
		}, 200*time.Millisecond, 20*time.Millisecond)
	}
}

func TestRequeueFailedJobRunsAgain(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testRequeueFailedJobRunsAgain[*sql.Tx], testRequeueFailedJobRunsAgain[pgx.Tx])
}

func testRequeueFailedJobRunsAgain[TTx any](t *testing.T, k *kit[TTx]) {
	var fail atomic.Bool
	fail.Store(true)
	c := k.client(t, &sluice.Config{Workers: workers(func(ctx context.Context, job *sluice.Job[noteArgs]) error {
		if fail.Load() {
			return errors.New("boom")
		}
		return nil
	})})
	res, err := c.Enqueue(t.Context(), noteArgs{}, &sluice.EnqueueOptions{MaxRetries: sluice.NoRetries})
	require.NoError(t, err)
	failed := waitFor(t, c, res.Job.ID, sluice.StatusFailed)

	_, err = c.RetryNow(t.Context(), res.Job.ID)
	requireConflict(t, err, sluice.StatusFailed)
	_, err = c.Delete(t.Context(), "nope")
	require.ErrorIs(t, err, sluice.ErrNotFound)

	fail.Store(false)
	row, err := c.Requeue(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, sluice.StatusPending, row.Status)
	require.Equal(t, failed.Attempt+sluice.DefaultMaxRetries, row.MaxRetries)
	require.Len(t, row.Errors, len(failed.Errors)+1)
	require.Equal(t, "requeued", row.Errors[len(row.Errors)-1].Error)
	done := waitFor(t, c, res.Job.ID, sluice.StatusCompleted)
	require.Equal(t, failed.Attempt+1, done.Attempt)

	_, err = c.Requeue(t.Context(), res.Job.ID)
	requireConflict(t, err, sluice.StatusCompleted)
}

func TestRetryNowAndDelete(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testRetryNowAndDelete[*sql.Tx], testRetryNowAndDelete[pgx.Tx])
}

func testRetryNowAndDelete[TTx any](t *testing.T, k *kit[TTx]) {
	started, causes := make(chan string, 1), make(chan error, 1)
	c := k.client(t, &sluice.Config{Workers: blockingWorkers(started, causes)})
	later, err := c.Enqueue(t.Context(), noteArgs{}, &sluice.EnqueueOptions{RunAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)

	row, err := c.RetryNow(t.Context(), later.Job.ID)
	require.NoError(t, err)
	require.True(t, row.RunAt.Before(later.Job.RunAt))
	require.Equal(t, later.Job.ID, <-started, "the job runs at once")

	_, err = c.Delete(t.Context(), later.Job.ID)
	requireConflict(t, err, sluice.StatusProcessing)
	_, err = c.Cancel(t.Context(), later.Job.ID)
	require.NoError(t, err)
	<-causes
	gone, err := c.Delete(t.Context(), later.Job.ID)
	require.NoError(t, err)
	require.Equal(t, sluice.StatusCancelled, gone.Status)
	_, err = c.Get(t.Context(), later.Job.ID)
	require.ErrorIs(t, err, sluice.ErrNotFound)
}

func TestBulkActionsByFilter(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testBulkActionsByFilter[*sql.Tx], testBulkActionsByFilter[pgx.Tx])
}

func testBulkActionsByFilter[TTx any](t *testing.T, k *kit[TTx]) {
	c := k.client(t, nil)
	hour := time.Now().Add(time.Hour)
	var notes []string
	for range 3 {
		res, err := c.Enqueue(t.Context(), noteArgs{}, &sluice.EnqueueOptions{RunAt: hour})
		require.NoError(t, err)
		notes = append(notes, res.Job.ID)
	}
	other, err := c.Enqueue(t.Context(), otherArgs{}, &sluice.EnqueueOptions{RunAt: hour})
	require.NoError(t, err)

	for name, f := range map[string]*sluice.JobFilter{
		"nil":            nil,
		"empty":          {},
		"empty statuses": {Statuses: []sluice.JobStatus{}},
		"unknown status": {Statuses: []sluice.JobStatus{"gone"}},
	} {
		_, err := c.DeleteMany(t.Context(), f)
		require.ErrorIs(t, err, sluice.ErrInvalidFilter, name)
	}
	require.Equal(t, 4, k.count(t), "nothing deleted")

	notesOnly := &sluice.JobFilter{Topics: []string{"note"}}
	rows, err := c.RetryNowMany(t.Context(), notesOnly)
	require.NoError(t, err)
	require.ElementsMatch(t, notes, idsOf(rows))
	rows, err = c.CancelMany(t.Context(), notesOnly)
	require.NoError(t, err)
	require.ElementsMatch(t, notes, idsOf(rows))
	rows, err = c.RequeueMany(t.Context(), &sluice.JobFilter{Statuses: []sluice.JobStatus{sluice.StatusCancelled}})
	require.NoError(t, err)
	require.ElementsMatch(t, notes, idsOf(rows))
	rows, err = c.DeleteMany(t.Context(), &sluice.JobFilter{Topics: []string{"other"}})
	require.NoError(t, err)
	require.Equal(t, []string{other.Job.ID}, idsOf(rows))
	require.Equal(t, 3, k.count(t))
}
