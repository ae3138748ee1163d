package sluiceweb_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"regexp"
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

func TestDashboardFilesGzipped(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		plain := e.do("GET", "js/main.js", "", "Accept-Encoding", "identity")
		require.Equal(t, http.StatusOK, plain.status)
		require.Empty(t, plain.header.Get("Content-Encoding"))
		require.Equal(t, "Accept-Encoding", plain.header.Get("Vary"))
		require.Equal(t, "text/javascript; charset=utf-8", plain.header.Get("Content-Type"))

		gz := e.do("GET", "js/main.js", "", "Accept-Encoding", "br, gzip;q=0.8")
		require.Equal(t, http.StatusOK, gz.status)
		require.Equal(t, "gzip", gz.header.Get("Content-Encoding"))
		require.Equal(t, "text/javascript; charset=utf-8", gz.header.Get("Content-Type"))
		require.Less(t, len(gz.body), len(plain.body))
		zr, err := gzip.NewReader(bytes.NewReader(gz.body))
		require.NoError(t, err)
		unzipped, err := io.ReadAll(zr)
		require.NoError(t, err)
		require.Equal(t, string(plain.body), string(unzipped))

		require.NotEqual(t, plain.header.Get("ETag"), gz.header.Get("ETag"), "each form has its own ETag")
		require.Equal(t, http.StatusNotModified,
			e.do("GET", "js/main.js", "", "Accept-Encoding", "gzip", "If-None-Match", gz.header.Get("ETag")).status)
		require.Empty(t, e.do("GET", "js/main.js", "", "Accept-Encoding", "gzip;q=0").header.Get("Content-Encoding"))
	})
}

// firstLoadBudget is the most the dashboard's first load may weigh,
// gzipped: what index.html loads and what its modules import.
const firstLoadBudget = 300 << 10

// TestDashboardFirstLoad weighs what a browser fetches to show the
// dashboard, and fails above the budget or for a reference to a file that
// does not exist. The figure is in docs/performance.md.
func TestDashboardFirstLoad(t *testing.T) {
	t.Parallel()
	dist := os.DirFS("ui/dist")
	index, err := fs.ReadFile(dist, "index.html")
	require.NoError(t, err)
	var queue []string
	for _, m := range regexp.MustCompile(`<(?:script|link)\b[^>]*\b(?:src|href)="([^"]+)"`).FindAllSubmatch(index, -1) {
		queue = append(queue, string(m[1]))
	}
	require.NotEmpty(t, queue)
	imports := regexp.MustCompile(`(?:\bfrom|\bimport)\s*["'](\.\.?/[^"']+)["']`)
	seen := map[string]bool{"index.html": true}
	files := []string{"index.html"}
	for len(queue) > 0 {
		name := path.Clean(queue[0])
		queue = queue[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		data, err := fs.ReadFile(dist, name)
		require.NoError(t, err, "index.html or a module refers to %s", name)
		files = append(files, name)
		if path.Ext(name) == ".js" {
			for _, m := range imports.FindAllSubmatch(data, -1) {
				queue = append(queue, path.Join(path.Dir(name), string(m[1])))
			}
		}
	}
	raw, zipped := 0, 0
	for _, name := range files {
		data, err := fs.ReadFile(dist, name)
		require.NoError(t, err)
		raw += len(data)
		zipped += gzipSize(t, data)
	}
	t.Logf("first load: %d files, %d bytes, %d bytes gzipped (budget %d)", len(files), raw, zipped, firstLoadBudget)
	require.Greater(t, len(files), 5, "the modules were followed")
	require.LessOrEqual(t, zipped, firstLoadBudget, "the dashboard's first load is over its budget")
}

// gzipSize returns the size of data gzipped as the handler sends it.
func gzipSize(t *testing.T, data []byte) int {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	require.NoError(t, err)
	_, err = zw.Write(data)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return min(buf.Len(), len(data))
}
