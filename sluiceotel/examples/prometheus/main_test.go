package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

func TestServesTheDashboardAndMetrics(t *testing.T) {
	t.Parallel()
	db, err := sqlitedriver.Open(filepath.Join(t.TempDir(), "jobs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	s, err := newServer(sqlitedriver.New(db))
	require.NoError(t, err)
	t.Cleanup(s.close)
	_, err = s.client.Enqueue(t.Context(), PingArgs{N: 1}, nil)
	require.NoError(t, err)
	srv := httptest.NewServer(s.handler)
	t.Cleanup(srv.Close)

	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	metrics := get("/metrics")
	require.Contains(t, metrics, `sluice_jobs_enqueued_total{otel_scope_name="github.com/sluicehq/sluice/sluiceotel"`)
	require.Contains(t, metrics, `sluice_queue_depth{otel_scope_name="github.com/sluicehq/sluice/sluiceotel"`)
	require.Contains(t, metrics, `sluice_queue_oldest_pending_age_seconds{`)
	require.Contains(t, get("/"), "js/main.js")
	require.Contains(t, get("/api/jobs/stats"), `"pending":1`)
}
