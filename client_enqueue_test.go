package sluice_test

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

type chanArgs struct {
	C chan int `json:"c"`
}

func (chanArgs) Topic() string { return "chan" }

type bigArgs struct {
	S string `json:"s"`
}

func (bigArgs) Topic() string { return "big" }

type nulTopicArgs struct{}

func (nulTopicArgs) Topic() string { return "mail\x00digest" }

type emptyTopicArgs struct{}

func (emptyTopicArgs) Topic() string { return "" }

// requireRefused requires that every form of enqueue refuses args and opts
// with an error matching is: alone, in a transaction, in a batch after a
// good job, and in a batch in a transaction.
func requireRefused[TTx any](t *testing.T, k *kit[TTx], c *sluice.Client[TTx], args sluice.JobArgs, opts *sluice.EnqueueOptions, is error) {
	t.Helper()
	_, err := c.Enqueue(t.Context(), args, opts)
	require.ErrorIs(t, err, is)
	batch := []sluice.EnqueueParams{{Args: noteArgs{}}, {Args: args, Options: opts}}
	_, err = c.EnqueueMany(t.Context(), batch)
	require.ErrorIs(t, err, is)

	tx := k.tx(t)
	_, err = c.EnqueueTx(t.Context(), tx, args, opts)
	require.ErrorIs(t, err, is)
	_, err = c.EnqueueManyTx(t.Context(), tx, batch)
	require.ErrorIs(t, err, is)
	k.end(t, tx, true)
}

func TestEnqueueRejectsBadInputAndWritesNothing(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testEnqueueRejectsBadInputAndWritesNothing[*sql.Tx], testEnqueueRejectsBadInputAndWritesNothing[pgx.Tx])
}

func testEnqueueRejectsBadInputAndWritesNothing[TTx any](t *testing.T, k *kit[TTx]) {
	c := k.client(t, &sluice.Config{MaxPayloadBytes: 1000})
	tests := []struct {
		name string
		args sluice.JobArgs
		opts *sluice.EnqueueOptions
		is   error
	}{
		{"args that do not marshal", chanArgs{C: make(chan int)}, nil, sluice.ErrInvalidArgs},
		{"nil args", nil, nil, sluice.ErrInvalidArgs},
		{"payload over the limit", bigArgs{S: strings.Repeat("x", 1000)}, nil, sluice.ErrPayloadTooLarge},
		{"NUL character in args", bigArgs{S: "a\x00b"}, nil, sluice.ErrInvalidArgs},
		{"empty topic", emptyTopicArgs{}, nil, sluice.ErrEmptyTopic},
		{"NUL character in topic", nulTopicArgs{}, nil, sluice.ErrInvalidArgs},
		{"NUL character in unique key", noteArgs{}, &sluice.EnqueueOptions{UniqueKey: "k\x00"}, sluice.ErrInvalidOptions},
		{"unique key not UTF-8", noteArgs{}, &sluice.EnqueueOptions{UniqueKey: "\xff"}, sluice.ErrInvalidOptions},
		{"negative MaxRetries", noteArgs{}, &sluice.EnqueueOptions{MaxRetries: -2}, sluice.ErrInvalidOptions},
		{"MaxRetries beyond 32 bits", noteArgs{}, &sluice.EnqueueOptions{MaxRetries: 1 << 40}, sluice.ErrInvalidOptions},
		{"priority out of range", noteArgs{}, &sluice.EnqueueOptions{Priority: 1 << 20}, sluice.ErrInvalidOptions},
		{"unknown queue", noteArgs{}, &sluice.EnqueueOptions{Queue: "nope"}, sluice.ErrUnknownQueue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { requireRefused(t, k, c, tt.args, tt.opts, tt.is) })
	}
	var argsErr *sluice.ArgsError
	_, err := c.Enqueue(t.Context(), chanArgs{C: make(chan int)}, nil)
	require.ErrorAs(t, err, &argsErr)
	require.Equal(t, "chan", argsErr.Topic)
	var optsErr *sluice.OptionsError
	_, err = c.Enqueue(t.Context(), noteArgs{}, &sluice.EnqueueOptions{MaxRetries: -5})
	require.ErrorAs(t, err, &optsErr)
	require.Equal(t, "MaxRetries", optsErr.Field)

	var nilTx TTx
	_, err = c.EnqueueTx(t.Context(), nilTx, noteArgs{}, nil)
	require.ErrorIs(t, err, sluice.ErrNilTx)
	_, err = c.EnqueueManyTx(t.Context(), nilTx, []sluice.EnqueueParams{{Args: noteArgs{}}})
	require.ErrorIs(t, err, sluice.ErrNilTx)

	require.Zero(t, k.count(t), "rejected input must write nothing")

	// The text \u0000 (a backslash, then u0000) is not a NUL character.
	_, err = c.Enqueue(t.Context(), bigArgs{S: `\u0000`}, nil)
	require.NoError(t, err)
}

func TestEnqueueStoresOptions(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testEnqueueStoresOptions[*sql.Tx], testEnqueueStoresOptions[pgx.Tx])
}

func testEnqueueStoresOptions[TTx any](t *testing.T, k *kit[TTx]) {
	c := k.client(t, &sluice.Config{Queues: map[string]sluice.QueueConfig{"mail": {}, sluice.QueueDefault: {}}})
	runAt := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
	res, err := c.Enqueue(t.Context(), noteArgs{N: 7}, &sluice.EnqueueOptions{
		RunAt: runAt, Queue: "mail", Priority: -3, MaxRetries: 9, UniqueKey: "k",
	})
	require.NoError(t, err)
	require.False(t, res.Duplicate)
	got, err := c.Get(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, "note", got.Topic)
	require.Equal(t, "mail", got.Queue)
	require.Equal(t, -3, got.Priority)
	require.Equal(t, 9, got.MaxRetries)
	require.Equal(t, "k", got.UniqueKey)
	require.True(t, runAt.Equal(got.RunAt))
	require.JSONEq(t, `{"n":7}`, string(got.Payload))
	require.Equal(t, sluice.StatusPending, got.Status)

	res, err = c.Enqueue(t.Context(), noteArgs{}, &sluice.EnqueueOptions{MaxRetries: sluice.NoRetries})
	require.NoError(t, err)
	require.Zero(t, res.Job.MaxRetries)
	res, err = c.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	require.Equal(t, sluice.DefaultMaxRetries, res.Job.MaxRetries)
	require.Equal(t, sluice.QueueDefault, res.Job.Queue)

	_, err = c.Get(t.Context(), "0190b4c2-0000-7000-8000-000000000000")
	require.ErrorIs(t, err, sluice.ErrNotFound)
}

func TestWorkerMaxRetriesAppliesWhenOptionsAreSilent(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testWorkerMaxRetriesAppliesWhenOptionsAreSilent[*sql.Tx], testWorkerMaxRetriesAppliesWhenOptionsAreSilent[pgx.Tx])
}

func testWorkerMaxRetriesAppliesWhenOptionsAreSilent[TTx any](t *testing.T, k *kit[TTx]) {
	w := sluice.NewWorkers()
	sluice.AddWorker(w, &fussyWorker{})
	c, err := sluice.NewClient(k.driver, &sluice.Config{Workers: w})
	require.NoError(t, err)
	res, err := c.Enqueue(t.Context(), fussyArgs{}, nil)
	require.NoError(t, err)
	require.Equal(t, 1, res.Job.MaxRetries)
	res, err = c.Enqueue(t.Context(), fussyArgs{}, &sluice.EnqueueOptions{MaxRetries: 5})
	require.NoError(t, err)
	require.Equal(t, 5, res.Job.MaxRetries)
}

type fussyArgs struct{}

func (fussyArgs) Topic() string { return "fussy" }

type fussyWorker struct {
	sluice.WorkerDefaults[fussyArgs]
}

func (*fussyWorker) MaxRetries() int { return 1 }
func (*fussyWorker) Work(context.Context, *sluice.Job[fussyArgs]) error {
	return errors.New("never happy")
}

func TestEnqueueTxCommitsOrRollsBackWithTheCaller(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testEnqueueTxCommitsOrRollsBackWithTheCaller[*sql.Tx], testEnqueueTxCommitsOrRollsBackWithTheCaller[pgx.Tx])
}

func testEnqueueTxCommitsOrRollsBackWithTheCaller[TTx any](t *testing.T, k *kit[TTx]) {
	ran := make(chan int, 10)
	c := k.client(t, &sluice.Config{Workers: workers(func(_ context.Context, job *sluice.Job[noteArgs]) error {
		ran <- job.Args.N
		return nil
	})})

	inTx := func(commit bool, n int) string {
		tx := k.tx(t)
		require.NoError(t, k.order(t.Context(), tx, strconv.Itoa(n)))
		res, err := c.EnqueueTx(t.Context(), tx, noteArgs{N: n}, nil)
		require.NoError(t, err)
		k.end(t, tx, commit)
		return res.Job.ID
	}
	rolledBack := inTx(false, 1)
	committed := inTx(true, 2)
	waitFor(t, c, committed, sluice.StatusCompleted)
	require.Equal(t, 2, <-ran)
	_, err := c.Get(t.Context(), rolledBack)
	require.ErrorIs(t, err, sluice.ErrNotFound)
	require.Zero(t, k.orders(t, "1"), "the rolled back order")
	require.Equal(t, 1, k.orders(t, "2"), "the committed order")
	require.Empty(t, ran)
}

func TestEnqueueManyInOrderAllOrNone(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testEnqueueManyInOrderAllOrNone[*sql.Tx], testEnqueueManyInOrderAllOrNone[pgx.Tx])
}

func testEnqueueManyInOrderAllOrNone[TTx any](t *testing.T, k *kit[TTx]) {
	c := k.client(t, nil)
	params := make([]sluice.EnqueueParams, 50)
	for i := range params {
		params[i] = sluice.EnqueueParams{Args: noteArgs{N: i}}
	}
	params[10].Options = &sluice.EnqueueOptions{UniqueKey: "u"}
	params[20].Options = &sluice.EnqueueOptions{UniqueKey: "u"}
	res, err := c.EnqueueMany(t.Context(), params)
	require.NoError(t, err)
	require.Len(t, res, 50)
	for i, r := range res {
		if i == 20 {
			require.True(t, r.Duplicate)
			require.Equal(t, res[10].Job.ID, r.Job.ID)
			continue
		}
		require.False(t, r.Duplicate)
		require.JSONEq(t, `{"n":`+strconv.Itoa(i)+`}`, string(r.Job.Payload))
	}
	require.Equal(t, 49, k.count(t))

	tx := k.tx(t)
	_, err = c.EnqueueManyTx(t.Context(), tx, params[:5])
	require.NoError(t, err)
	k.end(t, tx, false)
	require.Equal(t, 49, k.count(t))

	empty, err := c.EnqueueMany(t.Context(), nil)
	require.NoError(t, err)
	require.Empty(t, empty)
}

func TestUniqueKeyReturnsTheLiveJob(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testUniqueKeyReturnsTheLiveJob[*sql.Tx], testUniqueKeyReturnsTheLiveJob[pgx.Tx])
}

func testUniqueKeyReturnsTheLiveJob[TTx any](t *testing.T, k *kit[TTx]) {
	c := k.client(t, nil)
	first, err := c.Enqueue(t.Context(), noteArgs{N: 1}, &sluice.EnqueueOptions{UniqueKey: "daily"})
	require.NoError(t, err)
	second, err := c.Enqueue(t.Context(), noteArgs{N: 2}, &sluice.EnqueueOptions{UniqueKey: "daily"})
	require.NoError(t, err)
	require.True(t, second.Duplicate)
	require.Equal(t, first.Job.ID, second.Job.ID)
	require.JSONEq(t, `{"n":1}`, string(second.Job.Payload))

	tx := k.tx(t)
	third, err := c.EnqueueTx(t.Context(), tx, noteArgs{N: 3}, &sluice.EnqueueOptions{UniqueKey: "daily"})
	require.NoError(t, err)
	k.end(t, tx, true)
	require.True(t, third.Duplicate)
	require.Equal(t, 1, k.count(t))
}

func TestInsertOnlyClient(t *testing.T) {
	t.Parallel()
	k := sqliteKit(t)
	c, err := sluice.NewClient(k.driver, nil)
	require.NoError(t, err)
	_, err = c.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	require.ErrorIs(t, c.Start(t.Context()), sluice.ErrNoWorkers)
	require.NoError(t, c.Stop(t.Context()))
}

func TestNewClientValidatesConfig(t *testing.T) {
	t.Parallel()
	k := sqliteKit(t)
	tests := []struct {
		field string
		cfg   sluice.Config
	}{
		{`Queues["bad name!"]`, sluice.Config{Queues: map[string]sluice.QueueConfig{"bad name!": {}}}},
		{`Queues["q"].MaxWorkers`, sluice.Config{Queues: map[string]sluice.QueueConfig{"q": {MaxWorkers: -1}}}},
		{"PollInterval", sluice.Config{PollInterval: -time.Second}},
		{"LeaseDuration", sluice.Config{LeaseDuration: -time.Second}},
		{"HeartbeatInterval", sluice.Config{LeaseDuration: time.Second, HeartbeatInterval: time.Second}},
		{"RescueInterval", sluice.Config{RescueInterval: -1}},
		{"MaxRetries", sluice.Config{MaxRetries: -3}},
		{"MaxPayloadBytes", sluice.Config{MaxPayloadBytes: -1}},
		{"LeaseDuration", sluice.Config{LeaseDuration: 2}},
		{"PollInterval", sluice.Config{PollInterval: time.Microsecond}},
		{"ProgressInterval", sluice.Config{ProgressInterval: -time.Second}},
		{"ProgressInterval", sluice.Config{ProgressInterval: 9 * time.Millisecond}},
		{"Queues", sluice.Config{Workers: noteWorkers(), Queues: map[string]sluice.QueueConfig{"default": {}}}},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			_, err := sluice.NewClient(k.driver, &tt.cfg)
			require.ErrorIs(t, err, sluice.ErrInvalidConfig)
			var cfgErr *sluice.ConfigError
			require.ErrorAs(t, err, &cfgErr)
			require.Equal(t, tt.field, cfgErr.Field)
		})
	}
	_, err := sluice.NewClient[*sql.Tx](nil, nil)
	require.ErrorIs(t, err, sluice.ErrInvalidConfig)
}

func TestAddWorker(t *testing.T) {
	t.Parallel()
	w := sluice.NewWorkers()
	f := sluice.WorkFunc(func(context.Context, *sluice.Job[noteArgs]) error { return nil })
	require.NoError(t, sluice.AddWorkerSafely(w, f))
	require.ErrorIs(t, sluice.AddWorkerSafely(w, f), sluice.ErrDuplicateWorker)
	require.Panics(t, func() { sluice.AddWorker(w, f) })
	require.ErrorIs(t, sluice.AddWorkerSafely(w, sluice.WorkFunc(func(context.Context, *sluice.Job[emptyTopicArgs]) error {
		return nil
	})), sluice.ErrEmptyTopic)
}

func noteWorkers() *sluice.Workers {
	return workers(func(context.Context, *sluice.Job[noteArgs]) error { return nil })
}
