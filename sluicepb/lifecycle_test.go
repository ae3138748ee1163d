package sluicepb_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/sluicepb"
)

// jobAfterExit reads a job from the data.db of a terminated app.
func jobAfterExit(t *testing.T, dir, id string) *driver.JobRow {
	t.Helper()
	db, err := sqlitedriver.Open(filepath.Join(dir, "data.db"))
	require.NoError(t, err)
	defer db.Close()
	row, err := sqlitedriver.New(db, sqlitedriver.WithTable(sluicepb.DefaultTable)).Executor().
		JobGet(t.Context(), &driver.JobGetParams{ID: id})
	require.NoError(t, err)
	return row
}

// TestGracefulStop: the app's termination waits for a running job to
// finish and records its completion before data.db closes.
func TestGracefulStop(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}), make(chan struct{})
	p := newApp(t, &sluicepb.Config{ShutdownTimeout: time.Minute}, func(j *sluicepb.Jobs) {
		require.NoError(t, sluicepb.AddWorker(j, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[ChargeArgs]) error {
			close(started)
			<-release
			return nil
		})))
	})
	// Release the worker only once termination is under way, just before
	// the jobs are stopped: a stop that did not wait would close data.db
	// under the running job.
	p.app.OnTerminate().Bind(&hook.Handler[*core.TerminateEvent]{Priority: -10001, Func: func(e *core.TerminateEvent) error {
		time.AfterFunc(300*time.Millisecond, func() { close(release) })
		return e.Next()
	}})
	p.serve(t)
	id := p.enqueue(t, ChargeArgs{Order: "o1"})
	<-started
	p.terminate(t)
	row := jobAfterExit(t, p.dir, id)
	require.Equal(t, sluice.StatusCompleted, row.Status)
	require.Equal(t, 1, row.Attempt)
}

// TestStopHandsBack: a job still running when the shutdown timeout ends is
// cancelled and handed back, pending, to run again.
func TestStopHandsBack(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	p := newApp(t, &sluicepb.Config{ShutdownTimeout: 200 * time.Millisecond}, func(j *sluicepb.Jobs) {
		require.NoError(t, sluicepb.AddWorker(j, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[ChargeArgs]) error {
			close(started)
			<-ctx.Done()
			return ctx.Err()
		})))
	})
	p.serve(t)
	id := p.enqueue(t, ChargeArgs{Order: "o1"})
	<-started
	p.terminate(t)
	row := jobAfterExit(t, p.dir, id)
	require.Equal(t, sluice.StatusPending, row.Status)
	require.Empty(t, row.LockedBy)
}

// TestAckInTransaction: a worker acks its job in the transaction of its
// own record writes; when that transaction rolls back, the job is not
// completed and runs again.
func TestAckInTransaction(t *testing.T) {
	t.Parallel()
	var p *pbApp
	p = newApp(t, nil, func(j *sluicepb.Jobs) {
		require.NoError(t, sluicepb.AddWorker(j, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[ChargeArgs]) error {
			return p.app.RunInTransaction(func(txApp core.App) error {
				receipts, err := txApp.FindCollectionByNameOrId("receipts")
				if err != nil {
					return err
				}
				rec := core.NewRecord(receipts)
				rec.Set("order", job.Args.Order)
				if err := txApp.Save(rec); err != nil {
					return err
				}
				if err := j.Ack(ctx, txApp, job); err != nil {
					return err
				}
				if job.Attempt == 1 {
					return errors.New("the first attempt rolls back")
				}
				return nil
			})
		})))
	})
	receipts := core.NewBaseCollection("receipts")
	receipts.Fields.Add(&core.TextField{Name: "order"})
	require.NoError(t, p.app.Save(receipts))
	p.serve(t)
	id := p.enqueue(t, ChargeArgs{Order: "o1"})
	c, err := p.jobs.Client()
	require.NoError(t, err)
	var row *sluice.JobRow
	require.Eventually(t, func() bool {
		row, err = c.Get(t.Context(), id)
		require.NoError(t, err)
		return row.Status == sluice.StatusPending && row.Attempt == 1
	}, 20*time.Second, 10*time.Millisecond, "the first attempt's ack rolled back: the job waits for its retry")
	n, err := p.app.CountRecords("receipts")
	require.NoError(t, err)
	require.Zero(t, n)
	_, err = c.RetryNow(t.Context(), id)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		row, err = c.Get(t.Context(), id)
		require.NoError(t, err)
		return row.Status == sluice.StatusCompleted
	}, 20*time.Second, 10*time.Millisecond)
	require.Equal(t, 2, row.Attempt)
	n, err = p.app.CountRecords("receipts")
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
}
