package sluice_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

// secretArgs are the arguments of an encrypted topic.
type secretArgs struct {
	Card string `json:"card"`
	N    int    `json:"n"`
}

func (secretArgs) Topic() string { return "charge" }

var (
	key1 = sluice.EncryptionKey{ID: "k1", Key: bytes.Repeat([]byte{1}, 32)}
	key2 = sluice.EncryptionKey{ID: "k2", Key: bytes.Repeat([]byte{2}, 16)}
)

// encrypted returns a config that encrypts charge jobs with keys, the
// last the newest, and works them with work (none: insert-only).
func encrypted(work func(context.Context, *sluice.Job[secretArgs]) error, keys ...sluice.EncryptionKey) *sluice.Config {
	cfg := &sluice.Config{Encryption: sluice.Encryption{Keys: keys, Topics: []string{"charge"}}}
	if work != nil {
		cfg.Workers = sluice.NewWorkers()
		sluice.AddWorker(cfg.Workers, sluice.WorkFunc(work))
	}
	return cfg
}

func TestEncryptionKeepsPayloadsSecretAtRest(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testEncryptionKeepsPayloadsSecretAtRest[*sql.Tx], testEncryptionKeepsPayloadsSecretAtRest[pgx.Tx])
}

func testEncryptionKeepsPayloadsSecretAtRest[TTx any](t *testing.T, k *kit[TTx]) {
	ctx := t.Context()
	c := k.client(t, encrypted(nil, key1))
	res, err := c.Enqueue(ctx, secretArgs{Card: "4242-4242", N: 1}, &sluice.EnqueueOptions{
		UniqueKey: "charge-1", Tags: []string{"billing"}, Metadata: map[string]any{"customer": "acme"}})
	require.NoError(t, err)
	id := res.Job.ID
	n, err := k.db.queryInt(ctx, `SELECT count(*) FROM sluice_jobs WHERE CAST(id AS TEXT) = ?
		AND CAST(payload AS TEXT) LIKE '%sluice_sealed%' AND CAST(payload AS TEXT) NOT LIKE '%4242%'`, id)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the stored payload is sealed, the card number nowhere in it")
	row, err := c.Get(ctx, id)
	require.NoError(t, err)
	require.NotContains(t, string(row.Payload), "4242")
	keyID, ok := sluice.PayloadKeyID(row)
	require.True(t, ok)
	require.Equal(t, "k1", keyID)

	// Unique keys, tags and metadata stay clear text: they still select.
	dup, err := c.Enqueue(ctx, secretArgs{Card: "other"}, &sluice.EnqueueOptions{UniqueKey: "charge-1"})
	require.NoError(t, err)
	require.True(t, dup.Duplicate)
	page, err := c.List(ctx, &sluice.ListFilter{JobFilter: sluice.JobFilter{Tags: []string{"billing"},
		Metadata: map[string]string{"customer": "acme"}}})
	require.NoError(t, err)
	require.Len(t, page.Jobs, 1)

	// GetDecrypted, with the client's keys or the caller's.
	for _, keys := range [][]sluice.EncryptionKey{nil, {key2, key1}} {
		row, err = c.GetDecrypted(ctx, id, keys...)
		require.NoError(t, err)
		require.JSONEq(t, `{"card":"4242-4242","n":1}`, string(row.Payload))
	}
	_, err = c.GetDecrypted(ctx, id, key2)
	var uk *sluice.UnknownKeyError
	require.ErrorAs(t, err, &uk)
	require.Equal(t, sluice.UnknownKeyError{JobID: id, KeyID: "k1"}, *uk)
	_, err = c.GetDecrypted(ctx, id, sluice.EncryptionKey{ID: "k1", Key: bytes.Repeat([]byte{9}, 32)})
	require.ErrorIs(t, err, sluice.ErrDecrypt, "another key under the same ID")
	_, err = c.GetDecrypted(ctx, id, sluice.EncryptionKey{ID: "k1", Key: []byte("short")})
	var ke *sluice.KeyError
	require.ErrorAs(t, err, &ke)
	require.ErrorIs(t, err, sluice.ErrInvalidKey)

	// A payload in clear that looks encrypted is refused, nothing stored.
	before := k.count(t)
	_, err = c.Enqueue(ctx, sluice.RawArgs{TopicName: "note", Payload: row.Payload}, nil)
	require.NoError(t, err, "a decrypted payload is plain JSON")
	stored, _ := c.Get(ctx, id)
	_, err = c.Enqueue(ctx, sluice.RawArgs{TopicName: "note", Payload: stored.Payload}, nil)
	require.ErrorIs(t, err, sluice.ErrInvalidArgs)
	require.Equal(t, before+1, k.count(t))
}

func TestEncryptionKeyRotation(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testEncryptionKeyRotation[*sql.Tx], testEncryptionKeyRotation[pgx.Tx])
}

// testEncryptionKeyRotation enqueues jobs with k1, then with k1 and k2
// (k2 the newest), all pending at once; a worker holding both works
// them all, and one holding k2 only fails the k1 job it gets, for good,
// keeping its payload.
func testEncryptionKeyRotation[TTx any](t *testing.T, k *kit[TTx]) {
	ctx := t.Context()
	before := k.client(t, encrypted(nil, key1))
	after := k.client(t, encrypted(nil, key1, key2))
	byKey := map[string][]string{}
	for i := range 6 {
		c := before
		if i >= 3 {
			c = after
		}
		res, err := c.Enqueue(ctx, secretArgs{Card: "card", N: i}, &sluice.EnqueueOptions{Queue: "default"})
		require.NoError(t, err)
		keyID, _ := sluice.PayloadKeyID(res.Job)
		byKey[keyID] = append(byKey[keyID], res.Job.ID)
	}
	require.Len(t, byKey["k1"], 3, "old clients encrypt with k1")
	require.Len(t, byKey["k2"], 3, "new enqueues use the newest key")

	var mu sync.Mutex
	var got []int
	c := k.client(t, encrypted(func(_ context.Context, job *sluice.Job[secretArgs]) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, job.Args.N)
		if job.Args.Card != "card" || !json.Valid(job.Payload) || bytes.Contains(job.Payload, []byte("sluice_sealed")) {
			return sluice.Cancel(errors.New("the worker's job is not decrypted"))
		}
		return nil
	}, key1, key2))
	for _, ids := range byKey {
		for _, id := range ids {
			waitFor(t, c, id, sluice.StatusCompleted)
		}
	}
	mu.Lock()
	slices.Sort(got)
	require.Equal(t, []int{0, 1, 2, 3, 4, 5}, got)
	mu.Unlock()
}

func TestEncryptionMissingKeyFailsTheJob(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testEncryptionMissingKeyFailsTheJob[*sql.Tx], testEncryptionMissingKeyFailsTheJob[pgx.Tx])
}

func testEncryptionMissingKeyFailsTheJob[TTx any](t *testing.T, k *kit[TTx]) {
	ctx := t.Context()
	old := k.client(t, encrypted(nil, key1))
	res, err := old.Enqueue(ctx, secretArgs{Card: "card"}, &sluice.EnqueueOptions{MaxRetries: 5})
	require.NoError(t, err)
	worked := make(chan struct{}, 1)
	c := k.client(t, encrypted(func(context.Context, *sluice.Job[secretArgs]) error {
		worked <- struct{}{}
		return nil
	}, key2))
	row := waitFor(t, c, res.Job.ID, sluice.StatusFailed)
	require.Equal(t, 1, row.Attempt, "failed for good at once: a retry would not decrypt it")
	require.Len(t, row.Errors, 1)
	require.Contains(t, row.Errors[0].Error, `payload encrypted with key "k1", which is not held`)
	require.JSONEq(t, string(res.Job.Payload), string(row.Payload), "its payload is kept")
	require.Empty(t, worked, "the worker never ran")

	// Once a client holds the key, the job runs after a requeue. The
	// client without it stops first, or it could claim the job again.
	require.NoError(t, c.Stop(ctx))
	_, err = old.Requeue(ctx, row.ID)
	require.NoError(t, err)
	fixed := k.client(t, encrypted(func(context.Context, *sluice.Job[secretArgs]) error { return nil }, key1, key2))
	waitFor(t, fixed, row.ID, sluice.StatusCompleted)
}

// encryptedWorker has its jobs encrypted by its own choice.
type encryptedWorker struct {
	sluice.WorkerDefaults[secretArgs]
}

func (encryptedWorker) EncryptArgs() bool { return true }

func (encryptedWorker) Work(context.Context, *sluice.Job[secretArgs]) error { return nil }

func TestEncryptionPerWorkerAndBadConfig(t *testing.T) {
	t.Parallel()
	k := sqliteKit(t)
	ws := sluice.NewWorkers()
	sluice.AddWorker(ws, encryptedWorker{})
	c := k.client(t, &sluice.Config{Workers: ws, Encryption: sluice.Encryption{Keys: []sluice.EncryptionKey{key2}}})
	res, err := c.Enqueue(t.Context(), secretArgs{Card: "card"}, nil)
	require.NoError(t, err)
	keyID, ok := sluice.PayloadKeyID(res.Job)
	require.True(t, ok)
	require.Equal(t, "k2", keyID)
	waitFor(t, c, res.Job.ID, sluice.StatusCompleted)

	for field, e := range map[string]sluice.Encryption{
		"Encryption.Keys[1]":   {Keys: []sluice.EncryptionKey{key1, {ID: "k2", Key: make([]byte, 20)}}},
		"Encryption.Keys[0]":   {Keys: []sluice.EncryptionKey{{ID: "bad id", Key: make([]byte, 16)}}},
		"Encryption.Keys":      {Topics: []string{"charge"}},
		"Encryption.Topics[0]": {Keys: []sluice.EncryptionKey{key1}, Topics: []string{""}},
	} {
		_, err := sluice.NewClient(k.driver, &sluice.Config{Encryption: e})
		var ce *sluice.ConfigError
		require.ErrorAs(t, err, &ce, field)
		require.Equal(t, field, ce.Field)
	}
	_, err = sluice.NewClient(k.driver, &sluice.Config{Workers: ws})
	require.ErrorIs(t, err, sluice.ErrInvalidConfig, "a worker that encrypts needs a key")
}
