package sluice_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

// rawWorker is a raw worker with options of its own: two retries, retried
// at once, and a short timeout.
type rawWorker struct {
	sluice.WorkerDefaults[sluice.RawArgs]
	work func(ctx context.Context, job *sluice.Job[sluice.RawArgs]) error
}

func (w *rawWorker) Work(ctx context.Context, job *sluice.Job[sluice.RawArgs]) error {
	return w.work(ctx, job)
}
func (*rawWorker) MaxRetries() int                                   { return 2 }
func (*rawWorker) RetryPolicy() sluice.RetryPolicy                   { return quickRetry{} }
func (*rawWorker) Timeout(*sluice.Job[sluice.RawArgs]) time.Duration { return 5 * time.Second }

func TestRawWorkerGetsThePayloadAsStoredAndRetries(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testRawWorkerGetsThePayloadAsStoredAndRetries[*sql.Tx], testRawWorkerGetsThePayloadAsStoredAndRetries[pgx.Tx])
}

func testRawWorkerGetsThePayloadAsStoredAndRetries[TTx any](t *testing.T, k *kit[TTx]) {
	type seen struct {
		topic, payload string
		attempt        int
	}
	got := make(chan seen, 10)
	ws := sluice.NewWorkers()
	sluice.AddRawWorker(ws, "js.mail", &rawWorker{work: func(_ context.Context, job *sluice.Job[sluice.RawArgs]) error {
		got <- seen{job.Args.TopicName, string(job.Args.Payload), job.Attempt}
		if job.Attempt == 1 {
			return errors.New("smtp down")
		}
		return nil
	}})
	c := k.client(t, &sluice.Config{Workers: ws})
	require.Equal(t, []string{"js.mail"}, c.Topics())

	tx := k.tx(t)
	res, err := c.EnqueueTx(t.Context(), tx, sluice.RawArgs{TopicName: "js.mail", Payload: json.RawMessage(` [1, {"to": "ada"}] `)}, nil)
	require.NoError(t, err)
	require.Equal(t, 2, res.Job.MaxRetries, "the raw worker's MaxRetries applies")
	k.end(t, tx, true)

	for attempt := 1; attempt <= 2; attempt++ {
		s := <-got
		require.Equal(t, "js.mail", s.topic)
		require.Equal(t, attempt, s.attempt)
		require.JSONEq(t, `[1,{"to":"ada"}]`, s.payload) // Postgres's jsonb spaces it its own way
	}
	row := waitFor(t, c, res.Job.ID, sluice.StatusCompleted)
	require.Len(t, row.Errors, 1)
	require.Equal(t, "smtp down", row.Errors[0].Error)
	require.Equal(t, 1, row.Errors[0].Attempt)
}

func TestRawWorkerTopicAcceptsAnyJSONAndRefusesBadInput(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testRawWorkerTopicAcceptsAnyJSONAndRefusesBadInput[*sql.Tx], testRawWorkerTopicAcceptsAnyJSONAndRefusesBadInput[pgx.Tx])
}

func testRawWorkerTopicAcceptsAnyJSONAndRefusesBadInput[TTx any](t *testing.T, k *kit[TTx]) {
	ws := sluice.NewWorkers()
	sluice.AddRawWorker(ws, "raw", sluice.WorkFunc(func(context.Context, *sluice.Job[sluice.RawArgs]) error { return nil }))
	sluice.AddWorker(ws, sluice.WorkFunc(func(context.Context, *sluice.Job[noteArgs]) error { return nil }))
	// Not started: the jobs stay as enqueued.
	c, err := sluice.NewClient(k.driver, &sluice.Config{Workers: ws, Logger: quiet})
	require.NoError(t, err)
	require.Equal(t, []string{"note", "raw"}, c.Topics())

	for _, payload := range []string{`{"anything": [true]}`, `"text"`, `42`, `null`, ``} {
		_, err := c.Enqueue(t.Context(), sluice.RawArgs{TopicName: "raw", Payload: json.RawMessage(payload)}, nil)
		require.NoError(t, err, payload)
	}
	require.Equal(t, 5, k.count(t))

	requireRefused(t, k, c, sluice.RawArgs{TopicName: "raw", Payload: json.RawMessage(`{"a":`)}, nil, sluice.ErrInvalidArgs)
	requireRefused(t, k, c, sluice.RawArgs{TopicName: "raw", Payload: json.RawMessage(`"a\u0000"`)}, nil, sluice.ErrInvalidArgs)
	requireRefused(t, k, c, sluice.RawArgs{TopicName: "note", Payload: json.RawMessage(`{"anything": 1}`)}, nil, sluice.ErrInvalidArgs)
	requireRefused(t, k, c, sluice.RawArgs{TopicName: "raw2"}, nil, sluice.ErrUnknownTopic)
	require.Equal(t, 5, k.count(t))
}

func TestAddRawWorkerRefusesEmptyAndDuplicateTopics(t *testing.T) {
	t.Parallel()
	ws := sluice.NewWorkers()
	f := sluice.WorkFunc(func(context.Context, *sluice.Job[sluice.RawArgs]) error { return nil })
	require.ErrorIs(t, sluice.AddRawWorkerSafely(ws, "", f), sluice.ErrEmptyTopic)
	require.NoError(t, sluice.AddRawWorkerSafely(ws, "note", f))
	require.ErrorIs(t, sluice.AddRawWorkerSafely(ws, "note", f), sluice.ErrDuplicateWorker)
	require.ErrorIs(t, sluice.AddWorkerSafely(ws, sluice.WorkFunc(func(context.Context, *sluice.Job[noteArgs]) error { return nil })),
		sluice.ErrDuplicateWorker)
	require.Panics(t, func() { sluice.AddRawWorker(ws, "note", f) })
}
