package sluicepb

import (
	"embed"
	"io/fs"
	"net/http"

	"github.com/pocketbase/pocketbase/core"
)

// panelFiles are the Jobs panel's files: main.js, the admin UI extension,
// and panel.html, the standalone page.
//
//go:embed panel/main.js panel/panel.html
var panelFiles embed.FS

// uiExtension is the Jobs panel as an admin UI extension.
func uiExtension() core.UIExtension {
	sub, err := fs.Sub(panelFiles, "panel")
	if err != nil {
		panic(err) // the embedded directory exists
	}
	return core.UIExtension{Name: "sluicepb", FS: sub}
}

// servePanel serves the standalone Jobs page.
func servePanel(re *core.RequestEvent) error {
	b, err := panelFiles.ReadFile("panel/panel.html")
	if err != nil {
		return err
	}
	re.Response.Header().Set("Cache-Control", "no-cache")
	return re.Blob(http.StatusOK, "text/html; charset=utf-8", b)
}
