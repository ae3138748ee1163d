package browsertest

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
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
	"github.com/sluicehq/sluice/sluiceweb/browsertest/chrome"
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

	p := chrome.NewPage(t)
	p.Do("opening the admin UI", chromedp.Navigate(url+"/_/#/login"))
	p.Wait("the login form", `!!document.querySelector("#login_identity")`)
	p.Do("logging in",
		chromedp.SendKeys(chromedp.CSS("#login_identity"), rootEmail),
		chromedp.SendKeys(chromedp.CSS("#login_pass"), rootPassword+kb.Enter),
	)
	p.Wait("the Jobs link in the header", `!!document.querySelector('header a[href="#/jobs"]')`)
	p.Do("opening Jobs", chromedp.Click(chromedp.CSS(`header a[href="#/jobs"]`), chromedp.NodeVisible))
	frame := `document.querySelector("iframe.sluicepb-jobs")?.contentDocument`
	p.Wait("the dashboard in the panel", frame+`?.querySelector("nav a[href='#/jobs']") != null`)
	p.Eval(`String(document.querySelector("iframe.sluicepb-jobs").contentWindow.location.hash = "#/jobs/` + id + `")`)
	badge := `(` + frame + `?.querySelector(".job-title .badge")?.textContent ?? "").trim()`
	p.Wait("the failed job", badge+` === "failed"`)
	require.Contains(t, p.Eval(`(`+frame+`?.querySelector(".timeline")?.textContent ?? "")`), "upstream said no")

	healthy.Store(true)
	p.Eval(`String(` + frame + `.querySelector(".actions button[data-action=requeue]").click())`)
	p.Wait("the confirmation", frame+`?.querySelector("dialog[open]") != null`)
	p.Eval(`String(` + frame + `.querySelector("dialog[open] .d-foot button:last-child").click())`)
	p.Wait("the requeued job to complete", badge+` === "completed"`)
	screenshot(p, "pocketbase-panel.png")
	row, err := client.Get(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, sluice.StatusCompleted, row.Status)
	require.Equal(t, 2, row.Attempt)

	// The standalone page takes the admin UI's session.
	p.Do("opening the standalone page", chromedp.Navigate(url+sluicepb.PanelPath))
	standalone := `document.querySelector("iframe")?.contentDocument`
	p.Wait("the dashboard on the standalone page", standalone+`?.querySelector("nav a[href='#/jobs']") != null`)
	p.Eval(`String(document.querySelector("iframe").contentWindow.location.hash = "#/jobs/` + id + `")`)
	p.Wait("the job on the standalone page",
		`(`+standalone+`?.querySelector(".job-title .badge")?.textContent ?? "").trim() === "completed"`)
	require.Empty(t, p.Errors(), "console errors")
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

// screenshot saves the viewport in the directory SLUICE_SCREENSHOTS names
// (docs/img for the docs), if it is set.
func screenshot(p *chrome.Page, name string) {
	if dir := os.Getenv("SLUICE_SCREENSHOTS"); dir != "" {
		p.Screenshot(dir, name)
	}
}
