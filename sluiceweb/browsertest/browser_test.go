package browsertest

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

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// chromium returns the browser to drive: SLUICE_CHROMIUM, or the first of
// the usual names on the PATH. The test fails without one: CI installs it.
func chromium(t *testing.T) string {
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

// page is a browser tab, with the console messages it printed.
type page struct {
	t   *testing.T
	ctx context.Context

	mu      sync.Mutex
	console []chromedp.ConsoleMessage
	// expected are URLs whose failed loads the test caused on purpose.
	expected []string
}

// newPage starts a headless Chromium with a profile of its own and opens a
// tab; both end with the test.
func newPage(t *testing.T) *page {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
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
	p := &page{t: t, ctx: ctx}
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

// do runs steps, failing the test if they take more than 30 s.
func (p *page) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	require.NoError(p.t, chromedp.Do(ctx, steps...), what)
}

// wait waits until the JavaScript expression is true.
func (p *page) wait(what, expr string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(25*time.Second)))
	if err != nil {
		state, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](`location.hash + "\n" + document.querySelector("main").innerText.slice(0, 1500)`))
		p.t.Fatalf("waiting for %s (%s): %v\nthe page:\n%s", what, expr, err, state)
	}
}

// eval returns the value of a JavaScript expression.
func (p *page) eval(expr string) string {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](expr))
	require.NoError(p.t, err, expr)
	return v
}

// click clicks the element the CSS selector finds first.
func (p *page) click(what, selector string) {
	p.t.Helper()
	p.do("clicking "+what, chromedp.Click(chromedp.CSS(selector), chromedp.NodeVisible))
}

// confirm accepts the open confirmation dialog.
func (p *page) confirm() {
	p.t.Helper()
	p.wait("the confirmation", `!!document.querySelector("dialog[open]")`)
	p.click("the dialog's confirm button", "dialog[open] .d-foot button:last-child")
	p.wait("the dialog to close", `!document.querySelector("dialog[open]")`)
}

// screenshot saves the viewport as docs/img/name, when dir is not empty.
func (p *page) screenshot(dir, name string) {
	p.t.Helper()
	if dir == "" {
		return
	}
	p.eval(`String(document.querySelectorAll(".toast").forEach((t) => t.click()))`) // dismissed, as a reader would
	p.wait("the toasts to go", `!document.querySelector(".toast")`)
	buf, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
	require.NoError(p.t, err, "screenshot "+name)
	require.NoError(p.t, os.WriteFile(filepath.Join(dir, name), buf, 0o644))
}

// errors returns the console's errors and uncaught exceptions.
func (p *page) errors() []string {
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

// text returns the JavaScript expression of the trimmed text of the first
// element the CSS selector finds, or "".
func text(selector string) string {
	return `(document.querySelector(` + strconv.Quote(selector) + `)?.textContent ?? "").trim()`
}
