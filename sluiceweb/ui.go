package sluiceweb

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
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
// year; every other file is revalidated by its ETag each time.
type uiFiles struct {
	fsys  fs.FS
	etags map[string]string
}

// newUIFiles reads the dashboard's files and their ETags.
func newUIFiles() (*uiFiles, error) {
	fsys, err := fs.Sub(ui, "ui/dist")
	if err != nil {
		return nil, err
	}
	u := &uiFiles{fsys: fsys, etags: map[string]string{}}
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
	h.Set("ETag", u.etags[name])
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
}
