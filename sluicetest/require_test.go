package sluicetest_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluicetest"
)

func TestRequireEnqueued(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testRequireEnqueued[*sql.Tx], testRequireEnqueued[pgx.Tx])
}

func testRequireEnqueued[TTx any](t *testing.T, e *env[TTx]) {
	ctx := t.Context()
	clock := sluicetest.NewClock(time.Time{})
	c := e.client(t, &sluice.Config{Clock: clock.Now, Queues: map[string]sluice.QueueConfig{
		sluice.QueueDefault: {}, "mail": {}}})

	fails(t, func(tb testing.TB) { sluicetest.RequireEnqueued[mailArgs](tb, c, nil) }, `no job of topic "mail"`)
	passes(t, func(tb testing.TB) { sluicetest.RequireNotEnqueued[mailArgs](tb, c, nil) })

	runAt := clock.Now().Add(time.Hour)
	res, err := c.Enqueue(ctx, mailArgs{To: "a@example.com"}, &sluice.EnqueueOptions{Queue: "mail", Priority: 2,
		RunAt: runAt, MaxRetries: 5, UniqueKey: "welcome-a", Tags: []string{"welcome", "signup"},
		Metadata: map[string]any{"tenant": "acme", "n": 7}})
	require.NoError(t, err)

	prio, retries := 2, 5
	all := &sluicetest.RequireOpts{Queue: "mail", Priority: &prio, RunAt: runAt, Status: sluice.StatusPending,
		MaxRetries: &retries, UniqueKey: "welcome-a", Tags: []string{"signup"},
		Metadata: map[string]any{"tenant": "acme", "n": 7.0}}
	job := sluicetest.RequireEnqueued[mailArgs](t, c, all)
	require.Equal(t, res.Job.ID, job.ID)
	require.Equal(t, "a@example.com", job.Args.To)
	sluicetest.RequireEnqueued[mailArgs](t, c, nil)

	// Each option that differs fails, naming the field.
	other, three := 3, 3
	for msg, opts := range map[string]*sluicetest.RequireOpts{
		`queue is "mail", want "default"`:           {Queue: "default"},
		"priority is 2, want 3":                     {Priority: &other},
		"run_at is":                                 {RunAt: runAt.Add(time.Microsecond)},
		"status is pending, want completed":         {Status: sluice.StatusCompleted},
		"max_retries is 5, want 3":                  {MaxRetries: &three},
		`unique_key is "welcome-a", want "x"`:       {UniqueKey: "x"},
		`to include "nope"`:                         {Tags: []string{"welcome", "nope"}},
		`metadata["tenant"] is "acme", want "umbr"`: {Metadata: map[string]any{"tenant": "umbr"}},
		`metadata has no key "region"`:              {Metadata: map[string]any{"region": "eu"}},
	} {
		fails(t, func(tb testing.TB) { sluicetest.RequireEnqueued[mailArgs](tb, c, opts) }, "none of the 1 jobs", res.Job.ID, msg)
		passes(t, func(tb testing.TB) { sluicetest.RequireNotEnqueued[mailArgs](tb, c, opts) })
	}
	fails(t, func(tb testing.TB) { sluicetest.RequireNotEnqueued[mailArgs](tb, c, nil) }, res.Job.ID)
	fails(t, func(tb testing.TB) {
		sluicetest.RequireNotEnqueued[mailArgs](tb, c, &sluicetest.RequireOpts{Queue: "mail"})
	}, `want no job of topic "mail" with queue "mail"`, res.Job.ID)
	passes(t, func(tb testing.TB) { sluicetest.RequireNotEnqueued[smsArgs](tb, c, nil) })

	// Two that match: RequireEnqueued wants exactly one.
	second, err := c.Enqueue(ctx, mailArgs{To: "b@example.com"}, &sluice.EnqueueOptions{Queue: "mail"})
	require.NoError(t, err)
	fails(t, func(tb testing.TB) {
		sluicetest.RequireEnqueued[mailArgs](tb, c, &sluicetest.RequireOpts{Queue: "mail"})
	}, "2 jobs of topic", res.Job.ID, second.Job.ID)
	require.Equal(t, second.Job.ID, sluicetest.RequireEnqueued[mailArgs](t, c, &sluicetest.RequireOpts{Tags: nil,
		RunAt: second.Job.RunAt}).ID)

	// In a transaction: seen inside it before it commits, never after a
	// rollback.
	tx := e.begin(t)
	inTx, err := c.EnqueueTx(ctx, tx, smsArgs{To: "+1"}, nil)
	require.NoError(t, err)
	got := sluicetest.RequireEnqueuedTx[smsArgs](t, c, tx, nil)
	require.Equal(t, inTx.Job.ID, got.ID)
	require.Equal(t, "+1", got.Args.To)
	fails(t, func(tb testing.TB) { sluicetest.RequireNotEnqueuedTx[smsArgs](tb, c, tx, nil) }, inTx.Job.ID)
	e.rollback(t, tx)
	sluicetest.RequireNotEnqueued[smsArgs](t, c, nil)
}

func TestRequireManyEnqueued(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testRequireManyEnqueued[*sql.Tx], testRequireManyEnqueued[pgx.Tx])
}

func testRequireManyEnqueued[TTx any](t *testing.T, e *env[TTx]) {
	ctx := t.Context()
	c := e.client(t, nil)
	for _, args := range []sluice.JobArgs{mailArgs{To: "a"}, smsArgs{To: "b"}, mailArgs{To: "c"},
		sluice.RawArgs{TopicName: "ignored"}} {
		_, err := c.Enqueue(ctx, args, &sluice.EnqueueOptions{Tags: []string{args.Topic()}})
		require.NoError(t, err)
	}
	rows := sluicetest.RequireManyEnqueued(t, c, []sluicetest.ExpectedJob{
		{Args: mailArgs{}, Opts: &sluicetest.RequireOpts{Tags: []string{"mail"}}},
		{Args: smsArgs{}},
		{Args: mailArgs{}},
	})
	require.Len(t, rows, 3)
	require.JSONEq(t, `{"to": "c"}`, string(rows[2].Payload))
	// Of one topic only.
	require.Len(t, sluicetest.RequireManyEnqueued(t, c, []sluicetest.ExpectedJob{{Args: smsArgs{}}}), 1)

	fails(t, func(tb testing.TB) {
		sluicetest.RequireManyEnqueued(tb, c, []sluicetest.ExpectedJob{{Args: mailArgs{}}, {Args: mailArgs{}}, {Args: smsArgs{}}})
	}, `[1] job`, `is of topic "sms", want "mail"`, `[2] job`)
	fails(t, func(tb testing.TB) {
		sluicetest.RequireManyEnqueued(tb, c, []sluicetest.ExpectedJob{{Args: mailArgs{}}})
	}, "want 1 jobs", "found 2", `[1] job`, "not expected")
	fails(t, func(tb testing.TB) {
		sluicetest.RequireManyEnqueued(tb, c, []sluicetest.ExpectedJob{{Args: smsArgs{}}, {Args: smsArgs{}}})
	}, "want 2 jobs", `[1] want a job of topic "sms", found none`)
	fails(t, func(tb testing.TB) {
		sluicetest.RequireManyEnqueued(tb, c, []sluicetest.ExpectedJob{
			{Args: mailArgs{}, Opts: &sluicetest.RequireOpts{Queue: "other"}}, {Args: smsArgs{}}, {Args: mailArgs{}}})
	}, `[0] job`, `queue is "default", want "other"`)
	fails(t, func(tb testing.TB) { sluicetest.RequireManyEnqueued(tb, c, []sluicetest.ExpectedJob{{}}) }, "Args is nil")

	tx := e.begin(t)
	_, err := c.EnqueueTx(ctx, tx, smsArgs{To: "d"}, nil)
	require.NoError(t, err)
	require.Len(t, sluicetest.RequireManyEnqueuedTx(t, c, tx, []sluicetest.ExpectedJob{{Args: smsArgs{}}, {Args: smsArgs{}}}), 2)
	e.commit(t, tx)
	require.Len(t, sluicetest.RequireManyEnqueued(t, c, []sluicetest.ExpectedJob{{Args: smsArgs{}}, {Args: smsArgs{}}}), 2)
}

func TestRequireEnqueuedDecryptsPayloads(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testRequireEnqueuedDecryptsPayloads[*sql.Tx], testRequireEnqueuedDecryptsPayloads[pgx.Tx])
}

// testRequireEnqueuedDecryptsPayloads checks a job of an encrypted topic
// by its arguments in clear, as the client's keys decrypt them.
func testRequireEnqueuedDecryptsPayloads[TTx any](t *testing.T, e *env[TTx]) {
	c := e.client(t, &sluice.Config{Encryption: sluice.Encryption{
		Keys:   []sluice.EncryptionKey{{ID: "k1", Key: []byte("0123456789abcdef")}},
		Topics: []string{"mail"},
	}})
	res, err := c.Enqueue(t.Context(), mailArgs{To: "a@example.com"}, nil)
	require.NoError(t, err)
	_, sealed := sluice.PayloadKeyID(res.Job)
	require.True(t, sealed)
	job := sluicetest.RequireEnqueued[mailArgs](t, c, nil)
	require.Equal(t, "a@example.com", job.Args.To)
	plain, err := c.DecryptPayload(res.Job)
	require.NoError(t, err)
	require.JSONEq(t, `{"to": "a@example.com"}`, string(plain))
}
