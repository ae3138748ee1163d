package sluice_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

func TestRawArgsEnqueueCompactsAndDefaults(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testRawArgsEnqueueCompactsAndDefaults[*sql.Tx], testRawArgsEnqueueCompactsAndDefaults[pgx.Tx])
}

func testRawArgsEnqueueCompactsAndDefaults[TTx any](t *testing.T, k *kit[TTx]) {
	c := k.client(t, nil) // insert-only: any topic
	res, err := c.Enqueue(t.Context(), sluice.RawArgs{TopicName: "anything", Payload: json.RawMessage(" {\n \"a\" : [1, 2] } ")}, nil)
	require.NoError(t, err)
	require.Equal(t, "anything", res.Job.Topic)
	require.JSONEq(t, `{"a":[1,2]}`, string(res.Job.Payload))

	res, err = c.Enqueue(t.Context(), &sluice.RawArgs{TopicName: "empty"}, nil)
	require.NoError(t, err)
	require.JSONEq(t, `{}`, string(res.Job.Payload))
	require.Empty(t, c.Topics())
	require.Equal(t, sluice.DefaultMaxPayloadBytes, c.MaxPayloadBytes())
}

func TestRawArgsRejectsBadInputAndWritesNothing(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testRawArgsRejectsBadInputAndWritesNothing[*sql.Tx], testRawArgsRejectsBadInputAndWritesNothing[pgx.Tx])
}

func testRawArgsRejectsBadInputAndWritesNothing[TTx any](t *testing.T, k *kit[TTx]) {
	c := k.client(t, &sluice.Config{MaxPayloadBytes: 100, Workers: workers(func(context.Context, *sluice.Job[noteArgs]) error { return nil })})
	require.Equal(t, []string{"note"}, c.Topics())
	tests := []struct {
		name string
		args sluice.RawArgs
		opts *sluice.EnqueueOptions
		is   error
	}{
		{"not JSON", sluice.RawArgs{TopicName: "note", Payload: json.RawMessage(`{"n":`)}, nil, sluice.ErrInvalidArgs},
		{"two JSON values", sluice.RawArgs{TopicName: "note", Payload: json.RawMessage(`{} {}`)}, nil, sluice.ErrInvalidArgs},
		{"NUL character", sluice.RawArgs{TopicName: "note", Payload: json.RawMessage(`"a\u0000b"`)}, nil, sluice.ErrInvalidArgs},
		{"over the limit", sluice.RawArgs{TopicName: "note", Payload: json.RawMessage(`"` + strings.Repeat("x", 100) + `"`)}, nil, sluice.ErrPayloadTooLarge},
		{"wrong type for the worker", sluice.RawArgs{TopicName: "note", Payload: json.RawMessage(`{"n":"one"}`)}, nil, sluice.ErrInvalidArgs},
		{"unknown field for the worker", sluice.RawArgs{TopicName: "note", Payload: json.RawMessage(`{"m":1}`)}, nil, sluice.ErrInvalidArgs},
		// encoding/json would fill the field tagged "n" from each of these.
		{"a field named only by case", sluice.RawArgs{TopicName: "note", Payload: json.RawMessage(`{"N":1}`)}, nil, sluice.ErrInvalidArgs},
		{"a member twice", sluice.RawArgs{TopicName: "note", Payload: json.RawMessage(`{"n":1,"n":2}`)}, nil, sluice.ErrInvalidArgs},
		{"a member twice by case", sluice.RawArgs{TopicName: "note", Payload: json.RawMessage(`{"n":1,"N":2}`)}, nil, sluice.ErrInvalidArgs},
		{"invalid UTF-8", sluice.RawArgs{TopicName: "note", Payload: json.RawMessage("{\"n\":1,\"x\":\"\xff\"}")}, nil, sluice.ErrInvalidArgs},
		{"a lone surrogate", sluice.RawArgs{TopicName: "note", Payload: json.RawMessage(`"\ud800"`)}, nil, sluice.ErrInvalidArgs},
		{"topic without a worker", sluice.RawArgs{TopicName: "nope", Payload: json.RawMessage(`{}`)}, nil, sluice.ErrUnknownTopic},
		{"empty topic", sluice.RawArgs{Payload: json.RawMessage(`{}`)}, nil, sluice.ErrEmptyTopic},
		{"unknown queue", sluice.RawArgs{TopicName: "note"}, &sluice.EnqueueOptions{Queue: "nope"}, sluice.ErrUnknownQueue},
		{"bad options", sluice.RawArgs{TopicName: "note"}, &sluice.EnqueueOptions{Priority: 1 << 20}, sluice.ErrInvalidOptions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { requireRefused(t, k, c, tt.args, tt.opts, tt.is) })
	}
	require.Zero(t, k.count(t))

	var argsErr *sluice.ArgsError
	_, err := c.Enqueue(t.Context(), sluice.RawArgs{TopicName: "note", Payload: json.RawMessage(`{"n":"one"}`)}, nil)
	require.ErrorAs(t, err, &argsErr)
	require.Equal(t, "note", argsErr.Topic)
	require.Contains(t, err.Error(), "does not decode into")

	var topicErr *sluice.UnknownTopicError
	_, err = c.Enqueue(t.Context(), sluice.RawArgs{TopicName: "nope"}, nil)
	require.ErrorAs(t, err, &topicErr)
	require.Equal(t, &sluice.UnknownTopicError{Topic: "nope", Topics: []string{"note"}}, topicErr)
}

func TestRawArgsAreWorkedByTheTypedWorker(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testRawArgsAreWorkedByTheTypedWorker[*sql.Tx], testRawArgsAreWorkedByTheTypedWorker[pgx.Tx])
}

func testRawArgsAreWorkedByTheTypedWorker[TTx any](t *testing.T, k *kit[TTx]) {
	got := make(chan int, 1)
	c := k.client(t, &sluice.Config{Workers: workers(func(_ context.Context, job *sluice.Job[noteArgs]) error {
		got <- job.Args.N
		return nil
	})})
	tx := k.tx(t)
	res, err := c.EnqueueTx(t.Context(), tx, sluice.RawArgs{TopicName: "note", Payload: json.RawMessage(`{"n": 42}`)},
		&sluice.EnqueueOptions{UniqueKey: "k"})
	require.NoError(t, err)
	k.end(t, tx, true)
	require.Equal(t, 42, <-got)
	waitFor(t, c, res.Job.ID, sluice.StatusCompleted)
}
