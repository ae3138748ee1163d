package sluiceweb

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

// ui holds the dashboard: the files built into ui/dist, served at the
// handler's root. Building them needs no tool beyond the Go toolchain: they
// are committed as they are served.
//
//go:embed all:ui/dist
var ui embed.FS

// uiFiles serves the dashboard's files. A path that names no file and has
// no extension is the dashboard's own route (client-side routing) and gets
// index.html; a missing file with an extension is 404. Files under assets/
// are taken to have content hashes in their names and are cached for a
// year; every other file is revalidated by its ETag each time. Text files
// are compressed once, when the handler is made, and sent compressed to
// browsers that accept gzip.
type uiFiles struct {
	fsys  fs.FS
	etags map[string]string
	// gzipped are the compressed forms of the files that compress.
	gzipped map[string][]byte
}

// compressible are the extensions of the files worth compressing.
var compressible = map[string]bool{".html": true, ".js": true, ".css": true, ".svg": true, ".json": true, ".txt": true}

// gzipBytes returns data compressed as the dashboard's files are served.
func gzipBytes(data []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // the level is valid
	_, _ = zw.Write(data)                                    // writes to memory do not fail
	_ = zw.Close()
	return buf.Bytes()
}

// sharedUIFiles reads the embedded files once, for every handler: they
// never change.
var sharedUIFiles = sync.OnceValues(newUIFiles)

// newUIFiles reads the dashboard's files and their ETags.
func newUIFiles() (*uiFiles, error) {
	fsys, err := fs.Sub(ui, "ui/dist")
	if err != nil {
		return nil, err
	}
	u := &uiFiles{fsys: fsys, etags: map[string]string{}, gzipped: map[string][]byte{}}
	err = fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		u.etags[name] = `"` + hex.EncodeToString(sum[:12]) + `"`
		if compressible[path.Ext(name)] {
			if gz := gzipBytes(data); len(gz) < len(data) {
				u.gzipped[name] = gz
			}
		}
		return nil
	})
	return u, err
}

// ServeHTTP serves a dashboard file.
func (u *uiFiles) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if _, ok := u.etags[name]; !ok {
		if path.Ext(name) != "" {
			http.NotFound(w, r)
			return
		}
		name = "index.html"
	}
	data, err := fs.ReadFile(u.fsys, name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	if strings.HasPrefix(name, "assets/") {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	etag := u.etags[name]
	if gz, ok := u.gzipped[name]; ok {
		h.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r) {
			// The compressed form is another representation: another ETag.
			h.Set("Content-Encoding", "gzip")
			etag = strings.TrimSuffix(etag, `"`) + `-gz"`
			data = gz
		}
	}
	h.Set("ETag", etag)
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
}

// acceptsGzip reports whether r's Accept-Encoding allows gzip.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			return strings.ReplaceAll(strings.TrimSpace(params), " ", "") != "q=0"
		}
	}
	return false
}
