package sluiceweb_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDashboardFiles(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		index := e.do("GET", "", "")
		require.Equal(t, http.StatusOK, index.status)
		require.Equal(t, "text/html; charset=utf-8", index.header.Get("Content-Type"))
		require.Equal(t, "no-cache", index.header.Get("Cache-Control"))
		require.Equal(t, "nosniff", index.header.Get("X-Content-Type-Options"))
		require.Contains(t, string(index.body), "api/openapi.json")
		etag := index.header.Get("ETag")
		require.NotEmpty(t, etag)
		require.Equal(t, http.StatusNotModified, e.do("GET", "", "", "If-None-Match", etag).status)

		for _, route := range []string{"jobs", "jobs/0190f5d2-0000-7000-8000-000000000001", "queues/"} {
			r := e.do("GET", route, "")
			require.Equal(t, http.StatusOK, r.status, route)
			require.Equal(t, string(index.body), string(r.body), "the dashboard's own route %s gets index.html", route)
		}
		require.Equal(t, http.StatusNotFound, e.do("GET", "assets/missing.js", "").status)
		require.Equal(t, http.StatusMethodNotAllowed, e.do("POST", "", "").status)
		head := e.do("HEAD", "index.html", "")
		require.Equal(t, http.StatusOK, head.status)
		require.Empty(t, head.body)
		require.True(t, strings.HasPrefix(e.do("GET", "api/nope", "").header.Get("Content-Type"), "application/problem+json"),
			"an unknown API path is an API 404, not the dashboard")
	})
}
