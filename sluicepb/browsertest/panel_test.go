package browsertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"
	_ "github.com/pocketbase/pocketbase/migrations" // the system collections
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluicepb"
)

// flakyArgs are a job that fails while its upstream is down.
type flakyArgs struct {
	Order int `json:"order"`
}

func (flakyArgs) Topic() string { return "flaky" }

const (
	rootEmail    = "root@example.com"
	rootPassword = "a long password"
)

// TestJobsPanel logs in to the admin UI as a superuser, opens Jobs from
// the header, opens a failed job in the dashboard and requeues it, and
// sees it complete; then opens the standalone page with the same session.
func TestJobsPanel(t *testing.T) {
	var healthy atomic.Bool
	jobs, url := serveApp(t, func(j *sluicepb.Jobs) {
		require.NoError(t, sluicepb.AddWorker(j, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[flakyArgs]) error {
			if !healthy.Load() {
				return errors.New("upstream said no")
			}
			return nil
		})))
	})
	res, err := jobs.Enqueue(t.Context(), flakyArgs{Order: 7}, &sluice.EnqueueOptions{MaxRetries: sluice.NoRetries})
	require.NoError(t, err)
	id := res.Job.ID
	client, err := jobs.Client()
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		row, err := client.Get(t.Context(), id)
		require.NoError(t, err)
		return row.Status == sluice.StatusFailed
	}, 20*time.Second, 10*time.Millisecond)

	p := newPage(t)
	p.do("opening the admin UI", chromedp.Navigate(url+"/_/#/login"))
	p.wait("the login form", `!!document.querySelector("#login_identity")`)
	p.do("logging in",
		chromedp.SendKeys(chromedp.CSS("#login_identity"), rootEmail),
		chromedp.SendKeys(chromedp.CSS("#login_pass"), rootPassword+kb.Enter),
	)
	p.wait("the Jobs link in the header", `!!document.querySelector('header a[href="#/jobs"]')`)
	p.do("opening Jobs", chromedp.Click(chromedp.CSS(`header a[href="#/jobs"]`), chromedp.NodeVisible))
	frame := `document.querySelector("iframe.sluicepb-jobs")?.contentDocument`
	p.wait("the dashboard in the panel", frame+`?.querySelector("nav a[href='#/jobs']") != null`)
	p.eval(`String(document.querySelector("iframe.sluicepb-jobs").contentWindow.location.hash = "#/jobs/` + id + `")`)
	badge := `(` + frame + `?.querySelector(".job-title .badge")?.textContent ?? "").trim()`
	p.wait("the failed job", badge+` === "failed"`)
	require.Contains(t, p.eval(`(`+frame+`?.querySelector(".timeline")?.textContent ?? "")`), "upstream said no")

	healthy.Store(true)
	p.eval(`String(` + frame + `.querySelector(".actions button[data-action=requeue]").click())`)
	p.wait("the confirmation", frame+`?.querySelector("dialog[open]") != null`)
	p.eval(`String(` + frame + `.querySelector("dialog[open] .d-foot button:last-child").click())`)
	p.wait("the requeued job to complete", badge+` === "completed"`)
	p.screenshot("pocketbase-panel.png")
	row, err := client.Get(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, sluice.StatusCompleted, row.Status)
	require.Equal(t, 2, row.Attempt)

	// The standalone page takes the admin UI's session.
	p.do("opening the standalone page", chromedp.Navigate(url+sluicepb.PanelPath))
	standalone := `document.querySelector("iframe")?.contentDocument`
	p.wait("the dashboard on the standalone page", standalone+`?.querySelector("nav a[href='#/jobs']") != null`)
	p.eval(`String(document.querySelector("iframe").contentWindow.location.hash = "#/jobs/` + id + `")`)
	p.wait("the job on the standalone page",
		`(`+standalone+`?.querySelector(".job-title .badge")?.textContent ?? "").trim() === "completed"`)
	require.Empty(t, p.errors(), "console errors")
}

// serveApp serves a PocketBase app with sluicepb on an ephemeral port, with
// a superuser, and terminates it when the test ends.
func serveApp(t *testing.T, setup func(*sluicepb.Jobs)) (*sluicepb.Jobs, string) {
	t.Helper()
	app := core.NewBaseApp(core.BaseAppConfig{DataDir: t.TempDir()})
	jobs, err := sluicepb.Register(app, nil)
	require.NoError(t, err)
	setup(jobs)
	require.NoError(t, app.Bootstrap())
	require.NoError(t, app.RunAllMigrations())
	supers, err := app.FindCollectionByNameOrId(core.CollectionNameSuperusers)
	require.NoError(t, err)
	root := core.NewRecord(supers)
	root.SetEmail(rootEmail)
	root.SetPassword(rootPassword)
	require.NoError(t, app.Save(root))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	app.OnServe().BindFunc(func(e *core.ServeEvent) error {
		e.Listener = ln
		e.InstallerFunc = nil
		return e.Next()
	})
	served := make(chan error, 1)
	go func() { served <- apis.Serve(app, apis.ServeConfig{HttpAddr: ln.Addr().String()}) }()
	url := "http://" + ln.Addr().String()
	t.Cleanup(func() {
		require.NoError(t, app.OnTerminate().Trigger(&core.TerminateEvent{App: app}, func(e *core.TerminateEvent) error {
			return e.App.ResetBootstrapState()
		}))
		require.NoError(t, <-served)
	})
	require.Eventually(t, func() bool {
		res, err := http.Get(url + "/api/health")
		if err != nil {
			return false
		}
		_ = res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, 20*time.Second, 10*time.Millisecond)
	return jobs, url
}

// chromium returns the browser to drive: SLUICE_CHROMIUM, or the first of
// the usual names on the PATH. The test fails without one.
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
		state, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText.slice(0, 1500)`))
		p.t.Fatalf("waiting for %s (%s): %v\nthe page:\n%s\nconsole: %v", what, expr, err, state, p.errors())
	}
}

// eval returns the value of a JavaScript expression.
func (p *page) eval(expr string) string {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](expr))
	require.NoError(p.t, err, expr)
	return v
}

// screenshot saves the viewport in the directory SLUICE_SCREENSHOTS names
// (docs/img for the docs), if it is set.
func (p *page) screenshot(name string) {
	p.t.Helper()
	dir := os.Getenv("SLUICE_SCREENSHOTS")
	if dir == "" {
		return
	}
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
		out = append(out, fmt.Sprintf("%s (%s:%s)", m, m.URL, strconv.Itoa(int(m.Line))))
	}
	return out
}
