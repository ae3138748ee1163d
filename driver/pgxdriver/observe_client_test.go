package pgxdriver_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/pgxdriver"
	"github.com/sluicehq/sluice/internal/testkit/dbtest"
)

// TestLogsAndWebhookOnPostgres works jobs that log, through a client
// whose outcomes carry their last records and their webhook notifications
// in the completion batch, and checks both arrive: the records on the
// job, each notification at the endpoint once, signed.
func TestLogsAndWebhookOnPostgres(t *testing.T) {
	t.Parallel()
	pool, schema := dbtest.Pool(t)
	secret := []byte("k")
	got := make(chan string, 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := sluice.VerifyWebhook(secret, r.Header.Get("Sluice-Signature"), body, time.Now(), time.Minute); err != nil {
			t.Errorf("bad signature: %v", err)
		}
		got <- r.Header.Get("Sluice-Delivery")
	}))
	t.Cleanup(srv.Close)
	w := sluice.NewWorkers()
	sluice.AddWorker(w, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[pgArgs]) error {
		sluice.Logger(ctx).Info("working", "n", job.Args.N)
		return nil
	}))
	c, err := sluice.NewClient(pgxdriver.New(pool, pgxdriver.WithSchema(schema)), &sluice.Config{Workers: w,
		Logger: quiet, Webhooks: []sluice.Webhook{{URL: srv.URL, Secret: secret, Events: []sluice.EventKind{sluice.EventCompleted}}}})
	require.NoError(t, err)
	params := make([]sluice.EnqueueParams, 20)
	for i := range params {
		params[i] = sluice.EnqueueParams{Args: pgArgs{N: i}, Options: &sluice.EnqueueOptions{Tags: []string{"pg"}}}
	}
	res, err := c.EnqueueMany(t.Context(), params)
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, c.Stop(context.Background())) })
	seen := map[string]bool{}
	for range res {
		select {
		case id := <-got:
			require.False(t, seen[id], "delivered twice: %s", id)
			seen[id] = true
		case <-time.After(30 * time.Second):
			t.Fatal("a notification never arrived")
		}
	}
	for _, r := range res {
		row, err := c.Get(t.Context(), r.Job.ID)
		require.NoError(t, err)
		require.Equal(t, sluice.StatusCompleted, row.Status)
		require.Len(t, row.Logs, 1)
		require.Equal(t, "working", row.Logs[0].Message)
		require.Equal(t, []string{"pg"}, row.Tags)
	}
}
