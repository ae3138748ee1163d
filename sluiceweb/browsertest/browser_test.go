package browsertest

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/sluiceweb/browsertest/chrome"
)

// page is a browser tab showing the dashboard.
type page struct{ *chrome.Page }

// newPage starts a headless Chromium and opens a tab; both end with the
// test.
func newPage(t *testing.T) *page { return &page{chrome.NewPage(t)} }

// confirm accepts the dashboard's open confirmation dialog.
func (p *page) confirm() {
	p.Wait("the confirmation", `!!document.querySelector("dialog[open]")`)
	p.Click("the dialog's confirm button", "dialog[open] .d-foot button:last-child")
	p.Wait("the dialog to close", `!document.querySelector("dialog[open]")`)
}

// screenshot saves the viewport as dir/name, when dir is not empty, once
// the toasts are dismissed, as a reader would.
func (p *page) screenshot(dir, name string) {
	if dir == "" {
		return
	}
	p.Eval(`String(document.querySelectorAll(".toast").forEach((t) => t.click()))`)
	p.Wait("the toasts to go", `!document.querySelector(".toast")`)
	p.Screenshot(dir, name)
}

// text returns the JavaScript expression of the trimmed text of the first
// element the CSS selector finds, or "".
func text(selector string) string { return chrome.Text(selector) }

// screenshotDir returns where a test saves its screenshots: screenshots
// for its SQLite run, named sqlite, and "" (none) for the others.
func screenshotDir(t *testing.T, sqlite string) string {
	t.Helper()
	if t.Name() != sqlite {
		return ""
	}
	require.NoError(t, os.MkdirAll(screenshots, 0o755))
	return screenshots
}

// shots returns where the test named name saves its screenshots: the
// docs' images on its SQLite run, nowhere (empty) on the others.
func shots(t *testing.T, name string) string {
	t.Helper()
	return screenshotDir(t, name+"/SQLite")
}
