package browsertest

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

// screenshots is where the SQLite run saves its screenshots: the images of
// the README and docs/web.md.
var screenshots = filepath.Join("..", "..", "docs", "img")

func TestDashboard(t *testing.T) {
	onBothDrivers(t, func(t *testing.T, s *server, fx *fixture) {
		dir := screenshotDir(t, "TestDashboard/SQLite")
		p := newPage(t)
		emptyOverview(t, p, s)
		ctx := t.Context()
		for i := range 6 {
			_, err := s.client.Enqueue(ctx, mailArgs{To: "user" + strconv.Itoa(i) + "@example.com"}, &sluice.EnqueueOptions{Tags: []string{"newsletter"}})
			require.NoError(t, err)
		}
		_, err := s.client.Enqueue(ctx, mailArgs{To: "later@example.com"}, &sluice.EnqueueOptions{RunAt: time.Now().Add(time.Hour)})
		require.NoError(t, err)
		failing, err := s.client.Enqueue(ctx, flakyArgs{Order: 1042}, &sluice.EnqueueOptions{MaxRetries: sluice.NoRetries, Tags: []string{"billing"},
			Metadata: map[string]any{"requested_by": "browser test"}})
		require.NoError(t, err)
		long, err := s.client.Enqueue(ctx, longArgs{Name: "quarterly report"}, nil)
		require.NoError(t, err)

		overview(t, p, s, dir)
		failedJob(t, p, fx, failing.Job.ID, dir)
		runningJob(t, p, fx, long.Job.ID, dir)
		selection(t, p)
		tags(t, p)
		schedules(t, p, s, dir)
		queues(t, p, s)
		keys(t, p, s, fx, dir)
		problems(t, p)
		phone(t, p, dir)
		require.Equal(t, "1", p.Eval(`String(window.sluiceTestMark)`), "the page was never reloaded")
		require.Empty(t, p.Errors(), "the console's errors")
	})
}

// emptyOverview loads the dashboard over a database where nothing has
// finished yet: there is no success rate to show.
func emptyOverview(t *testing.T, p *page, s *server) {
	p.Do("loading the empty dashboard", chromedp.Navigate(s.url))
	p.Wait("the overview's counts", text("a.card.s-pending .value")+` === "0" && `+text(".kpis")+`.includes("Success rate")`)
	require.Contains(t, p.Eval(text(".kpis")), "Success rate—", "no outcomes, no rate")
}

// overview loads the dashboard, in light and dark.
func overview(t *testing.T, p *page, s *server, dir string) {
	p.Do("loading the dashboard", chromedp.Navigate(s.url))
	p.Wait("the overview's counts", text("a.card.s-failed .value")+` === "1" && `+text("a.card.s-completed .value")+` === "6"`)
	p.Eval(`String(window.sluiceTestMark = 1)`)
	require.Contains(t, p.Eval(text(".legend")), "1 client online")
	p.Wait("the throughput chart", `document.querySelectorAll("svg.chart rect.c").length > 0`)
	p.screenshot(dir, "overview.png")
	// The theme button cycles system, light, dark.
	p.Click("the theme button", `button[aria-label^="Theme"]`)
	p.Click("the theme button", `button[aria-label^="Theme"]`)
	p.Wait("the dark theme", `document.documentElement.dataset.theme === "dark"`)
	require.Equal(t, "rgb(15, 18, 22)", p.Eval(`getComputedStyle(document.body).backgroundColor`), "dark colours")
	p.screenshot(dir, "overview-dark.png")
	p.Click("the theme button", `button[aria-label^="Theme"]`)
	p.Wait("the system's theme", `document.documentElement.dataset.theme === undefined`)
}

// failedJob filters the list to the failed job, opens it with the
// keyboard, requeues it and sees it complete, then goes back to the list.
func failedJob(t *testing.T, p *page, fx *fixture, id, dir string) {
	p.Click("Jobs", `nav a[href="#/jobs"]`)
	p.Wait("the list", `document.querySelectorAll("tbody tr.row").length === 9`)
	p.Click("the failed filter", "button.chip.s-failed")
	p.Wait("the filtered list", `location.hash.includes("statuses=failed") && document.querySelectorAll("tbody tr.row").length === 1`)
	require.Contains(t, p.Eval(text("tbody tr.row")), "flaky")
	require.Contains(t, p.Eval(text("tbody tr.row")), "upstream said no")
	p.screenshot(dir, "jobs.png")

	p.Do("opening the job with Enter", chromedp.Focus(chromedp.CSS("tbody tr.row")), chromedp.KeyEvent(kb.Enter))
	p.Wait("the job", `location.hash === "#/jobs/`+id+`" && `+text("main h1")+` === "flaky"`)
	require.Equal(t, "failed", p.Eval(text(".job-title .badge")))
	require.Contains(t, p.Eval(text(".timeline .errmsg")), "upstream said no: 503")
	require.Contains(t, p.Eval(text("[data-testid=explain]")), "failed")

	fx.healthy.Store(true)
	p.Click("Requeue", ".actions button[data-action=requeue]")
	p.confirm()
	p.Wait("the requeued job to complete", text(".job-title .badge")+` === "completed"`)
	require.Contains(t, p.Eval(text(".timeline")), "Attempt 2")

	p.Do("going back", chromedp.NavigateBack())
	p.Wait("the list, still filtered, without the job", `location.hash.includes("statuses=failed") && `+text(".empty")+` === "No jobs match."`)
}

// runningJob watches the long job's progress and logs arrive, and cancels
// it.
func runningJob(t *testing.T, p *page, fx *fixture, id, dir string) {
	p.Eval(`String(location.hash = "#/jobs/` + id + `")`)
	p.Wait("the running job's first step", text("[data-testid=progress-percent]")+` === "10%" && `+text("[data-testid=logs]")+`.includes("started step 1")`)
	require.Equal(t, "processing", p.Eval(text(".job-title .badge")))
	require.Contains(t, p.Eval(text("[data-testid=explain]")), "running")
	close(fx.advance)
	p.Wait("the progress bar to move", `document.querySelector(".progress-line [role=progressbar]")?.getAttribute("aria-valuenow") === "60"`)
	p.Wait("the new log line", text("[data-testid=logs]")+`.includes("reached step 2")`)
	require.Contains(t, p.Eval(text("[data-testid=progress-message]")), "step 2 of 3")
	p.Do("letting the bar finish moving", chromedp.Sleep(600*time.Millisecond))
	p.screenshot(dir, "job.png")

	p.Click("Cancel", ".actions button[data-action=cancel]")
	p.confirm()
	p.Wait("the job to be cancelled", text(".job-title .badge")+` === "cancelled"`)
}

// selection selects the delayed job in the list and runs it now, through
// the selection's bar.
func selection(t *testing.T, p *page) {
	p.Eval(`String(location.hash = "#/jobs?topics=mail&statuses=pending")`)
	p.Wait("the delayed job", `document.querySelectorAll("tbody tr.row").length === 1`)
	require.Contains(t, p.Eval(text("tbody tr.row")), "runs in")
	p.Do("selecting it with Space", chromedp.Focus(chromedp.CSS("tbody tr.row")), chromedp.KeyEvent(" "))
	p.Wait("the selection's bar", text(".bulkbar strong")+` === "1 selected"`)
	p.Click("Run now", ".bulkbar button[data-action=retry]")
	p.confirm()
	p.Wait("the job to run and leave the filtered list", text(".empty")+` === "No jobs match."`)
}

// tags lists the jobs of a tag, from the link on a job's page.
func tags(t *testing.T, p *page) {
	p.Eval(`String(location.hash = "#/jobs?tags=billing")`)
	p.Wait("the billing job", `document.querySelectorAll("tbody tr.row").length === 1`)
	p.Do("opening it", chromedp.Focus(chromedp.CSS("tbody tr.row")), chromedp.KeyEvent(kb.Enter))
	p.Wait("the job's tags", `!!document.querySelector('main a.tag[href="#/jobs?tags=billing"]')`)
	require.Contains(t, p.Eval(text("main")), "requested_by")
	p.Eval(`String(location.hash = "#/jobs?tags=newsletter")`)
	p.Wait("the newsletter's jobs", `document.querySelectorAll("tbody tr.row").length === 6`)
	require.Equal(t, "6", p.Eval(`String(document.querySelectorAll("tbody tr.row .tag").length)`))
}

// schedules creates a stored schedule through the page's form, pauses it
// with its switch, which must leave the rest of its definition as it was,
// and deletes it.
func schedules(t *testing.T, p *page, s *server, dir string) {
	p.Click("Schedules", `nav a[href="#/schedules"]`)
	p.Wait("no schedules yet", text(".empty")+`.includes("No stored schedules")`)
	p.Click("New schedule", ".page-head button.primary")
	p.Wait("the form", `!!document.querySelector("#sched-form")`)
	p.Do("filling the form",
		chromedp.SendKeys(`#sched-form input[name=name]`, "nightly-digest"),
		chromedp.SendKeys(`#sched-form input[name=topic]`, "mail"),
		chromedp.SendKeys(`#sched-form input[name=cron]`, "0 3 * * *"),
		chromedp.SendKeys(`#sched-form input[name=time_zone]`, "Europe/Paris"))
	p.Click("Create", `dialog[open] button[type=submit]`)
	p.Wait("the schedule listed", `[...document.querySelectorAll("tbody tr")].some((r) => r.textContent.includes("nightly-digest"))`)
	row := p.Eval(text("tbody tr"))
	require.Contains(t, row, "0 3 * * *")
	require.Contains(t, row, "Europe/Paris")
	require.Contains(t, row, "never")
	p.screenshot(dir, "schedules.png")

	p.Click("its switch", `button.switch[aria-label="Enabled: nightly-digest"]`)
	p.Wait("the schedule paused", `document.querySelector("button.switch").getAttribute("aria-checked") === "false" && `+text("tbody tr")+`.includes("paused")`)
	stored, err := s.client.GetSchedule(t.Context(), "nightly-digest")
	require.NoError(t, err)
	require.True(t, stored.Disabled)
	require.Equal(t, 0, stored.MaxRetries, "pausing kept the default retries")
	require.Equal(t, "Europe/Paris", stored.TimeZone)

	p.Click("Delete", `tbody tr button.danger`)
	p.confirm()
	p.Wait("no schedules again", text(".empty")+`.includes("No stored schedules")`)
}

// queues pauses the default queue from the queues page, sees it paused
// in the page and in the database, and resumes it.
func queues(t *testing.T, p *page, s *server) {
	p.Eval(`String(location.hash = "#/queues")`)
	p.Wait("the pause button", `!!document.querySelector("button[data-queue=default][data-action=pause]")`)
	p.Click("Pause", "button[data-queue=default][data-action=pause]")
	p.Wait("the paused queue", `!!document.querySelector("[data-paused=default]") && !!document.querySelector("button[data-queue=default][data-action=resume]")`)
	states, err := s.client.QueueStates(t.Context())
	require.NoError(t, err)
	require.Len(t, states, 1)
	require.True(t, states[0].Paused, "the queue's stored state")
	p.Click("Resume", "button[data-queue=default][data-action=resume]")
	p.Wait("the resumed queue", `!document.querySelector("[data-paused=default]") && !!document.querySelector("button[data-queue=default][data-action=pause]")`)
	states, err = s.client.QueueStates(t.Context())
	require.NoError(t, err)
	require.False(t, states[0].Paused, "the queue's stored state")

	// A job waiting for another shows what it waits for; both are then
	// deleted through the API, so that the lists keep their counts.
	dep, err := s.client.Enqueue(t.Context(), mailArgs{To: "first@example.com"}, &sluice.EnqueueOptions{RunAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	waiting, err := s.client.Enqueue(t.Context(), mailArgs{To: "then@example.com"}, &sluice.EnqueueOptions{DependsOn: []string{dep.Job.ID}})
	require.NoError(t, err)
	p.Eval(`String(location.hash = "#/jobs/` + waiting.Job.ID + `")`)
	p.Wait("what the job waits for", `!!document.querySelector("[data-testid=depends-on]")`)
	require.Contains(t, p.Eval(text(".facts")), "Waits for")
	require.Contains(t, p.Eval(`document.querySelector("[data-testid=depends-on] a").getAttribute("href")`), dep.Job.ID)
	p.Eval(`String(location.hash = "#/queues")`) // the job's page would reload what is deleted
	p.Wait("the queues page", `!!document.querySelector("button[data-queue=default]")`)
	for _, id := range []string{waiting.Job.ID, dep.Job.ID} {
		require.Equal(t, "200", p.Eval(`(() => { const x = new XMLHttpRequest(); x.open("DELETE", "api/jobs/`+id+`", false); x.send(); return String(x.status); })()`))
	}
}

// problems opens a job that does not exist: the API's problem is shown.
func problems(t *testing.T, p *page) {
	const missing = "01a21100-0000-7000-8000-000000000000"
	p.Expect("api/jobs/" + missing)
	p.Eval(`String(location.hash = "#/jobs/` + missing + `")`)
	p.Wait("the problem", `!!document.querySelector("main .problem")`)
	shown := p.Eval(text("main .problem"))
	require.Contains(t, shown, "No such job")
	require.Contains(t, shown, "404")
	require.Contains(t, shown, "not_found")
}

// phone shows the list at a phone's width: nothing wider than the screen.
func phone(t *testing.T, p *page, dir string) {
	p.Do("a phone's viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	p.Eval(`String(location.hash = "#/jobs")`)
	p.Wait("the list", `document.querySelectorAll("tbody tr.row").length === 9`)
	require.Equal(t, "true", p.Eval(`String(document.documentElement.scrollWidth <= 390)`), "the page fits the screen")
	p.screenshot(dir, "phone.png")
	p.Do("a desktop's viewport", chromedp.EmulateViewport(1400, 900))
}
