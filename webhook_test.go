package sluice_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

// receiver is a webhook endpoint that fails its first failFirst deliveries
// and records the bodies of those it accepts, after checking each one's
// signature.
type receiver struct {
	t         *testing.T
	secret    []byte
	failFirst int

	mu       sync.Mutex
	attempts int
	accepted []sluice.WebhookBody
	got      chan sluice.WebhookBody
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := sluice.VerifyWebhook(rc.secret, r.Header.Get("Sluice-Signature"), body, time.Now(), 5*time.Minute); err != nil {
		rc.t.Errorf("delivery with a bad signature: %v", err)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	rc.mu.Lock()
	rc.attempts++
	fail := rc.attempts <= rc.failFirst
	rc.mu.Unlock()
	if fail {
		http.Error(w, "not now", http.StatusServiceUnavailable)
		return
	}
	var b sluice.WebhookBody
	if err := json.Unmarshal(body, &b); err != nil {
		rc.t.Errorf("delivery body: %v", err)
	}
	if b.ID != r.Header.Get("Sluice-Delivery") {
		rc.t.Errorf("delivery %q under the header %q", b.ID, r.Header.Get("Sluice-Delivery"))
	}
	rc.mu.Lock()
	rc.accepted = append(rc.accepted, b)
	rc.mu.Unlock()
	rc.got <- b
}

func newReceiver(t *testing.T, failFirst int) (*receiver, *httptest.Server) {
	t.Helper()
	rc := &receiver{t: t, secret: []byte("s3cret"), failFirst: failFirst, got: make(chan sluice.WebhookBody, 16)}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	return rc, srv
}

func TestWebhookRetriedUntilDeliveredOnce(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testWebhookRetriedUntilDeliveredOnce[*sql.Tx], testWebhookRetriedUntilDeliveredOnce[pgx.Tx])
}

func testWebhookRetriedUntilDeliveredOnce[TTx any](t *testing.T, k *kit[TTx]) {
	rc, srv := newReceiver(t, 2)
	ws := workers(func(ctx context.Context, job *sluice.Job[noteArgs]) error {
		if job.Args.N == 1 {
			return sluice.SetResult(ctx, map[string]int{"sent": 3})
		}
		return errors.New("smtp is down")
	})
	c := k.client(t, &sluice.Config{Workers: ws, MaxRetries: sluice.NoRetries,
		Webhooks: []sluice.Webhook{{URL: srv.URL + "/hook", Secret: rc.secret, RetryPolicy: quickRetry{}}}})
	ok, err := c.Enqueue(t.Context(), noteArgs{N: 1}, &sluice.EnqueueOptions{Tags: []string{"t"}})
	require.NoError(t, err)
	got := <-rc.got
	require.Equal(t, "job.completed", got.Event)
	require.Equal(t, ok.Job.ID, got.Job.ID)
	require.Equal(t, sluice.StatusCompleted, got.Job.Status)
	require.Equal(t, []string{"t"}, got.Job.Tags)
	require.JSONEq(t, `{"sent": 3}`, string(got.Job.Result))
	// The notification job itself completed after two failed deliveries.
	note := waitFor(t, c, got.ID, sluice.StatusCompleted)
	require.Equal(t, sluice.WebhookTopic, note.Topic)
	require.Equal(t, 3, note.Attempt)
	require.Len(t, note.Errors, 2)
	require.Contains(t, note.Errors[0].Error, "503")

	failed, err := c.Enqueue(t.Context(), noteArgs{N: 2}, nil)
	require.NoError(t, err)
	got = <-rc.got
	require.Equal(t, "job.failed", got.Event)
	require.Equal(t, failed.Job.ID, got.Job.ID)
	require.Equal(t, "smtp is down", got.Job.Error)

	never(t, func() bool { return len(rc.got) > 0 }, 300*time.Millisecond, 10*time.Millisecond,
		"a notification job is not notified of itself, and each outcome once")
	rc.mu.Lock()
	defer rc.mu.Unlock()
	require.Len(t, rc.accepted, 2)
}

func TestWebhookWithAckInTx(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testWebhookWithAckInTx[*sql.Tx], testWebhookWithAckInTx[pgx.Tx])
}

func testWebhookWithAckInTx[TTx any](t *testing.T, k *kit[TTx]) {
	rc, srv := newReceiver(t, 0)
	var c *sluice.Client[TTx]
	ws := workers(func(ctx context.Context, job *sluice.Job[noteArgs]) error {
		tx, err := k.begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = k.rollback(context.Background(), tx) }()
		if err := c.Nack(ctx, tx, job, sluice.Cancel(errors.New("not wanted"))); err != nil {
			return err
		}
		return k.commit(ctx, tx)
	})
	c = k.client(t, &sluice.Config{Workers: ws,
		Webhooks: []sluice.Webhook{{URL: srv.URL, Secret: rc.secret, Events: []sluice.EventKind{sluice.EventCancelled}}}})
	res, err := c.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	got := <-rc.got
	require.Equal(t, "job.cancelled", got.Event)
	require.Equal(t, res.Job.ID, got.Job.ID)
	require.Equal(t, "sluice: job cancelled: not wanted", got.Job.Error)
}

func TestWebhookConfig(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testWebhookConfig[*sql.Tx], testWebhookConfig[pgx.Tx])
}

func testWebhookConfig[TTx any](t *testing.T, k *kit[TTx]) {
	for i, w := range []sluice.Webhook{
		{URL: "ftp://example.com/x", Secret: []byte("s")},
		{URL: "file:///etc/passwd", Secret: []byte("s")},
		{URL: "/relative", Secret: []byte("s")},
		{URL: "http://example.com"},
		{URL: "https://example.com", Secret: []byte("s"), Queue: "nope"},
		{URL: "https://example.com", Secret: []byte("s"), Events: []sluice.EventKind{sluice.EventStarted}},
	} {
		_, err := sluice.NewClient(k.driver, &sluice.Config{Webhooks: []sluice.Webhook{w}})
		var ce *sluice.ConfigError
		require.ErrorAs(t, err, &ce, "webhook %d", i)
		require.ErrorIs(t, err, sluice.ErrInvalidConfig)
	}
	k.client(t, nil) // migrates
	require.Zero(t, k.count(t))
}

func TestVerifyWebhook(t *testing.T) {
	t.Parallel()
	secret, body, at := []byte("k"), []byte(`{"id":"1"}`), time.Unix(1_900_000_000, 0)
	sig := sluice.SignWebhook(secret, at, body)
	require.NoError(t, sluice.VerifyWebhook(secret, sig, body, at.Add(time.Minute), 5*time.Minute))
	for _, err := range []error{
		sluice.VerifyWebhook(secret, sig, body, at.Add(time.Hour), 5*time.Minute),   // replayed later
		sluice.VerifyWebhook([]byte("x"), sig, body, at, 5*time.Minute),             // another secret
		sluice.VerifyWebhook(secret, sig, []byte(`{"id":"2"}`), at, 5*time.Minute),  // another body
		sluice.VerifyWebhook(secret, "v1=00", body, at, 5*time.Minute),              // malformed
		sluice.VerifyWebhook(secret, "t=1900000000,v1=zz", body, at, 5*time.Minute), // not hex
	} {
		require.ErrorIs(t, err, sluice.ErrWebhookSignature)
	}
}
