// Package chrome drives a headless Chromium tab for the browser tests of
// the dashboard (sluiceweb/browsertest) and of PocketBase's Jobs panel
// (sluicepb/browsertest): start it, act, wait for the page, read it, and
// collect what its console reported.
package chrome

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// Timeout is how long one action or wait may take before the test fails.
const Timeout = 30 * time.Second

// Path returns the browser to drive: SLUICE_CHROMIUM, or the first of the
// usual names on the PATH. The test fails without one: CI installs it.
func Path(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("SLUICE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium found: install Debian's chromium package, or set SLUICE_CHROMIUM")
	return ""
}

// Page is a browser tab, with the console messages it printed.
type Page struct {
	t   testing.TB
	ctx context.Context

	mu      sync.Mutex
	console []chromedp.ConsoleMessage
	// expected are URLs whose failed loads the test caused on purpose.
	expected []string
}

// NewPage starts a headless Chromium with a profile of its own, 1400×900,
// and opens a tab; both end with the test.
func NewPage(t testing.TB) *Page {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(Path(t)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// The first action starts the browser; it gets no timeout, which would
	// end the browser with it.
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1400, 900)), "starting Chromium")
	p := &Page{t: t, ctx: ctx}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			p.mu.Lock()
			p.console = append(p.console, m)
			p.mu.Unlock()
		}
	}()
	return p
}

// Do runs steps, failing the test if they take more than Timeout.
func (p *Page) Do(what string, steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, Timeout)
	defer cancel()
	require.NoError(p.t, chromedp.Do(ctx, steps...), what)
}

// Wait waits until the JavaScript expression is true, and otherwise fails
// the test with the page's address, the start of its text and the
// console's errors.
func (p *Page) Wait(what, expr string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, Timeout)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(Timeout-5*time.Second)))
	if err != nil {
		state, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText.slice(0, 1500)`))
		p.t.Fatalf("waiting for %s (%s): %v\nthe page:\n%s\nconsole: %v", what, expr, err, state, p.Errors())
	}
}

// Eval returns the value of a JavaScript expression, a string.
func (p *Page) Eval(expr string) string {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](expr))
	require.NoError(p.t, err, expr)
	return v
}

// OnNewDocument runs the JavaScript source in every document the tab
// loads from now on, before the document's own scripts.
func (p *Page) OnNewDocument(source string) {
	p.t.Helper()
	p.Do("adding a script to new documents", func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: source})
		return chromedp.Void{}, err
	})
}

// Click clicks the element the CSS selector finds first, once visible.
func (p *Page) Click(what, selector string) {
	p.t.Helper()
	p.Do("clicking "+what, chromedp.Click(chromedp.CSS(selector), chromedp.NodeVisible))
}

// Screenshot saves the viewport as the PNG file dir/name.
func (p *Page) Screenshot(dir, name string) {
	p.t.Helper()
	buf, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
	require.NoError(p.t, err, "screenshot "+name)
	require.NoError(p.t, os.WriteFile(filepath.Join(dir, name), buf, 0o644))
}

// Expect says that loads of URLs containing url will fail on purpose:
// Errors leaves out the network errors they print.
func (p *Page) Expect(url string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expected = append(p.expected, url)
}

// Errors returns the console's errors and uncaught exceptions.
func (p *Page) Errors() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, m := range p.console {
		if m.Type != chromedp.ConsoleError && m.Type != chromedp.ConsoleException {
			continue
		}
		if m.Source == "network" && slices.ContainsFunc(p.expected, func(u string) bool { return strings.Contains(m.URL, u) }) {
			continue
		}
		out = append(out, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line))
	}
	return out
}

// Text returns the JavaScript expression of the trimmed text of the first
// element the CSS selector finds, or "".
func Text(selector string) string {
	return `(document.querySelector(` + strconv.Quote(selector) + `)?.textContent ?? "").trim()`
}
