package sluice_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

func TestSetResultCompletesTheJobWithIt(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testSetResultCompletesTheJobWithIt[*sql.Tx], testSetResultCompletesTheJobWithIt[pgx.Tx])
}

func testSetResultCompletesTheJobWithIt[TTx any](t *testing.T, k *kit[TTx]) {
	setErrs := make(chan error, 3)
	c := k.client(t, &sluice.Config{
		RetryPolicy: quickRetry{},
		Workers: workers(func(ctx context.Context, job *sluice.Job[noteArgs]) error {
			setErrs <- sluice.SetResult(ctx, make(chan int))
			require.NoError(t, sluice.SetResult(ctx, map[string]int{"attempt": job.Attempt}))
			if job.Args.N == 1 && job.Attempt == 1 {
				return errors.New("not yet") // its result is not kept
			}
			require.NoError(t, sluice.SetResult(ctx, map[string]any{"sent": job.Args.N, "attempt": job.Attempt}))
			return nil
		}),
	})
	res, err := c.Enqueue(t.Context(), noteArgs{N: 1}, nil)
	require.NoError(t, err)
	retried := waitFor(t, c, res.Job.ID, sluice.StatusCompleted)
	require.JSONEq(t, `{"sent": 1, "attempt": 2}`, string(retried.Result), "the last result of the run that completed")
	require.ErrorIs(t, <-setErrs, sluice.ErrInvalidArgs)

	require.ErrorIs(t, sluice.SetResult(t.Context(), 1), sluice.ErrNotJobContext)
}
