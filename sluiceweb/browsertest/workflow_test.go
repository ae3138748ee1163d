package browsertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

// TestWorkflowPage opens a workflow's page and watches its graph change
// as its tasks run, fail and are retried, and a batch's page as it is
// cancelled; the SQLite run saves their screenshots.
func TestWorkflowPage(t *testing.T) {
	onBothDrivers(t, func(t *testing.T, s *server, fx *fixture) {
		dir := screenshotDir(t, "TestWorkflowPage/SQLite")
		p := newPage(t)
		workflowGraph(t, p, s, fx, dir)
		batchPage(t, p, s, fx, dir)
		require.Equal(t, "1", p.Eval(`String(window.sluiceTestMark)`), "the page was never reloaded")
		require.Empty(t, p.Errors(), "the console's errors")
	})
}

// node returns the expression of the status a task's node shows.
func node(task string) string {
	return `(document.querySelector('svg.graph [data-task="` + task + `"]')?.getAttribute("data-status") ?? "")`
}

// nodes returns the expression that is true when each task's node shows
// its status.
func nodes(want map[string]string) string {
	expr := "true"
	for task, status := range want {
		expr += " && " + node(task) + ` === "` + status + `"`
	}
	return expr
}

var resizes = []string{"resize-1", "resize-2", "resize-3", "resize-4"}

// workflowGraph enqueues an album pipeline (fetch, four resizes after it,
// the album after them, then a mail and a publish after the album), opens
// its page from the list, and sees each task's node change as the test
// lets the tasks run: one resize fails for good, the album is cancelled,
// the workflow fails; Retry runs them again to the end.
func workflowGraph(t *testing.T, p *page, s *server, fx *fixture, dir string) {
	once := &sluice.EnqueueOptions{MaxRetries: sluice.NoRetries}
	w := sluice.NewWorkflow("album 2026-11").Add("fetch", stepArgs{Name: "fetch"}, once)
	for _, r := range resizes {
		w.Add(r, stepArgs{Name: r}, once, "fetch")
	}
	w.Add("album", stepArgs{Name: "album"}, once, resizes...).
		Add("mail owner", stepArgs{Name: "mail owner"}, once, "album").
		Add("publish", stepArgs{Name: "publish"}, once, "album").
		OnSuccess(mailArgs{To: "owner@example.com"}, nil).
		OnFailure(mailArgs{To: "support@example.com"}, nil)
	res, err := s.client.EnqueueWorkflow(t.Context(), w)
	require.NoError(t, err)

	p.Do("loading the dashboard", chromedp.Navigate(s.url+"#/workflows"))
	p.Eval(`String(window.sluiceTestMark = 1)`)
	p.Wait("the workflow listed", `!!document.querySelector('tr[data-group="`+res.ID+`"]')`)
	require.Contains(t, p.Eval(text(`tr[data-group="`+res.ID+`"]`)), "album 2026-11")
	require.Equal(t, "running", p.Eval(text(`tr[data-group="`+res.ID+`"] [data-testid=group-status]`)))
	p.Click("the workflow", `tr[data-group="`+res.ID+`"] a`)
	p.Wait("its graph", `location.hash === "#/workflows/`+res.ID+`" && document.querySelectorAll("svg.graph .node").length === 8`)
	p.Wait("fetch running, the rest waiting", nodes(map[string]string{"fetch": "processing", "resize-1": "waiting", "album": "waiting", "publish": "waiting"}))
	require.Equal(t, "10", p.Eval(`String(document.querySelectorAll("svg.graph .edge").length)`), "an edge per task after another")
	require.Equal(t, "#/jobs/"+res.Tasks["album"].ID, p.Eval(`document.querySelector('svg.graph [data-task="album"]').getAttribute("href")`))
	// The layers run left to right: fetch, the resizes, the album, then
	// the mail and the publish.
	x := func(task string) string {
		return p.Eval(`String(document.querySelector('svg.graph [data-task="` + task + `"]').getCTM().e)`)
	}
	require.Equal(t, x("resize-1"), x("resize-4"))
	require.Equal(t, x("mail owner"), x("publish"))
	require.NotEqual(t, x("fetch"), x("resize-1"))

	fx.step(false, "fetch")
	p.Wait("fetch completed, the resizes running", nodes(map[string]string{"fetch": "completed", "resize-1": "processing",
		"resize-2": "processing", "resize-3": "processing", "resize-4": "processing", "album": "waiting"}))
	fx.step(false, "resize-1", "resize-2")
	p.Wait("two resizes completed", nodes(map[string]string{"resize-1": "completed", "resize-2": "completed", "resize-3": "processing"}))
	p.Wait("the counts", text("[data-testid=group-counts]")+`.includes("3 completed") && `+text("[data-testid=group-counts]")+`.includes("3 waiting")`)
	p.screenshot(dir, "workflow.png")

	// A resize fails for good: the album and what comes after it are
	// cancelled, the workflow fails, and its callback on failure runs.
	fx.step(true, "resize-3")
	fx.step(false, "resize-4")
	p.Wait("the failure spread", nodes(map[string]string{"resize-3": "failed", "resize-4": "completed", "album": "cancelled",
		"mail owner": "cancelled", "publish": "cancelled"}))
	p.Wait("the workflow failed", text(".page-head [data-testid=group-status]")+` === "failed" && `+text("[data-testid=group-outcome]")+`.startsWith("failure")`)
	p.Wait("the callback on failure completed", `!!document.querySelector('[data-testid=callbacks] tr[data-on=failure] .badge.s-completed')`)
	require.Contains(t, p.Eval(text(`[data-testid=callbacks] tr[data-on=success]`)), "not enqueued: the outcome was failure")
	require.Equal(t, "", p.Eval(text(".actions [data-action=cancel]")), "nothing left to cancel")

	// Retry: the failed resize runs again, the cancelled tasks wait again,
	// and the graph goes on to the end.
	fx.reset("resize-3")
	p.Click("Retry", ".actions button[data-action=retry]")
	p.confirm()
	p.Wait("the resize running again", nodes(map[string]string{"resize-3": "processing", "album": "waiting", "publish": "waiting"}))
	fx.step(false, "resize-3", "album", "mail owner", "publish")
	p.Wait("every task completed", nodes(map[string]string{"resize-3": "completed", "album": "completed", "mail owner": "completed", "publish": "completed"}))
	p.Wait("the workflow completed", text(".page-head [data-testid=group-status]")+` === "completed" && `+text("[data-testid=group-outcome]")+`.startsWith("success")`)
	p.Wait("the callback on success completed", `!!document.querySelector('[data-testid=callbacks] tr[data-on=success] .badge.s-completed')`)

	// A node opens its task's job, which links back to the workflow.
	p.Click("the album's node", `svg.graph [data-task="album"]`)
	p.Wait("the album's job", `location.hash === "#/jobs/`+res.Tasks["album"].ID+`" && `+text("[data-testid=job-group]")+` === "task album"`)
	p.Click("the link to its workflow", "[data-testid=job-group]")
	p.Wait("the workflow again", `location.hash === "#/workflows/`+res.ID+`" && `+node("album")+` === "completed"`)

	// On a phone the graph scrolls in its panel; the page fits the screen.
	p.Do("a phone's viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	p.Wait("the graph at a phone's width", `document.documentElement.clientWidth === 390 && !!document.querySelector("svg.graph")`)
	require.Equal(t, "true", p.Eval(`String(document.documentElement.scrollWidth <= 390)`), "the page fits the screen")
	p.Do("a desktop's viewport", chromedp.EmulateViewport(1400, 900))
}

// batchPage enqueues a batch of three jobs with callbacks, watches one
// complete on its page, cancels the rest from the page, and sees the
// callback on failure enqueued.
func batchPage(t *testing.T, p *page, s *server, fx *fixture, dir string) {
	later := time.Now().Add(time.Hour)
	b := sluice.NewBatch("thumbnails").OnSuccess(mailArgs{To: "done@example.com"}, nil).
		OnFailure(mailArgs{To: "support@example.com"}, &sluice.EnqueueOptions{RunAt: later}).
		OnComplete(mailArgs{To: "log@example.com"}, &sluice.EnqueueOptions{RunAt: later})
	for i := range 3 {
		b.Add(stepArgs{Name: fmt.Sprint("thumb-", i)}, &sluice.EnqueueOptions{MaxRetries: sluice.NoRetries})
	}
	res, err := s.client.EnqueueBatch(t.Context(), b)
	require.NoError(t, err)
	p.Click("Workflows", `nav a[href="#/workflows"]`)
	p.Click("Batches", `.page-head .seg button:last-child`)
	p.Wait("the batch listed", `location.hash === "#/batches" && !!document.querySelector('tr[data-group="`+res.ID+`"]')`)
	p.Click("the batch", `tr[data-group="`+res.ID+`"] a`)
	p.Wait("its jobs running", `document.querySelectorAll("[data-testid=group-jobs] tr .badge.s-processing").length === 3`)
	fx.step(false, "thumb-0")
	p.Wait("one completed", `document.querySelectorAll("[data-testid=group-jobs] tr .badge.s-completed").length === 1`)
	p.Click("Cancel", ".actions button[data-action=cancel]")
	p.confirm()
	p.Wait("the batch failed", text(".page-head [data-testid=group-status]")+` === "failed" && `+
		`document.querySelectorAll("[data-testid=group-jobs] tr .badge.s-cancelled").length === 2`)
	p.Wait("the callbacks on failure and completion enqueued", `!!document.querySelector('[data-testid=callbacks] tr[data-on=failure] .badge.s-pending')`+
		` && !!document.querySelector('[data-testid=callbacks] tr[data-on=complete] .badge.s-pending')`)
	require.Contains(t, p.Eval(text(`[data-testid=callbacks] tr[data-on=success]`)), "not enqueued")
	p.screenshot(dir, "batch.png")
}
