package sluice_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

type misArgs struct {
	Kind string `json:"kind"`
}

func (misArgs) Topic() string { return "misbehave" }

// misWorker panics, hangs past its timeout ignoring its context, or
// returns an enormous error, as its job asks; other jobs complete.
type misWorker struct {
	sluice.WorkerDefaults[misArgs]
}

const hang = 1500 * time.Millisecond

func (misWorker) Timeout(job *sluice.Job[misArgs]) time.Duration {
	if job.Args.Kind == "hang" {
		return 50 * time.Millisecond
	}
	return 0
}

func (misWorker) Work(_ context.Context, job *sluice.Job[misArgs]) error {
	switch job.Args.Kind {
	case "panic":
		panic("worker panicked on purpose")
	case "hang":
		time.Sleep(hang) // ignores its context
		return nil
	case "huge":
		return errors.New(strings.Repeat("enormous ", 1<<20))
	}
	return nil
}

// TestMisbehavingWorkersDoNotTakeTheClientDown runs workers that panic,
// hang past their timeout while ignoring their context, and return
// enormous errors, on a client with only two worker slots: each such job
// fails with its error recorded, and the client goes on working every
// other job, before and after them.
func TestMisbehavingWorkersDoNotTakeTheClientDown(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testMisbehavingWorkersDoNotTakeTheClientDown[*sql.Tx], testMisbehavingWorkersDoNotTakeTheClientDown[pgx.Tx])
}

func testMisbehavingWorkersDoNotTakeTheClientDown[TTx any](t *testing.T, k *kit[TTx]) {
	w := sluice.NewWorkers()
	sluice.AddWorker(w, misWorker{})
	c := k.client(t, &sluice.Config{Workers: w, Queues: map[string]sluice.QueueConfig{sluice.QueueDefault: {MaxWorkers: 2}}})
	var params []sluice.EnqueueParams
	kinds := []string{"panic", "hang", "huge", "ok"}
	for i := range 40 {
		params = append(params, sluice.EnqueueParams{Args: misArgs{Kind: kinds[i%len(kinds)]},
			Options: &sluice.EnqueueOptions{MaxRetries: sluice.NoRetries}})
	}
	res, err := c.EnqueueMany(t.Context(), params)
	require.NoError(t, err)
	for i, r := range res {
		kind := kinds[i%len(kinds)]
		if kind == "ok" {
			waitFor(t, c, r.Job.ID, sluice.StatusCompleted)
			continue
		}
		row := waitFor(t, c, r.Job.ID, sluice.StatusFailed)
		require.Len(t, row.Errors, 1)
		e := row.Errors[0]
		switch kind {
		case "panic":
			require.Contains(t, e.Error, "worker panicked on purpose")
			require.Contains(t, e.Trace, "misbehave_test.go")
		case "hang":
			require.Contains(t, e.Error, "did not return")
		case "huge":
			require.LessOrEqual(t, len(e.Error), 4096)
		}
	}
	// The client still takes new work after all of that.
	r, err := c.Enqueue(t.Context(), misArgs{Kind: "ok"}, nil)
	require.NoError(t, err)
	waitFor(t, c, r.Job.ID, sluice.StatusCompleted)
	time.Sleep(hang) // let the abandoned workers end before the leak check
}
