package browsertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluiceweb"
)

// TestPayloadFilterAndBulkCount filters the jobs list by a payload value,
// sees a malformed path refused, then cancels every matching job by
// filter: the confirmation says how many of the matching jobs the action
// will touch (the pending ones, not the completed one) before it runs.
func TestPayloadFilterAndBulkCount(t *testing.T) {
	onBothDrivers(t, func(t *testing.T, s *server, _ *fixture) {
		dir := shots(t, "TestPayloadFilterAndBulkCount")
		ctx := t.Context()
		now, err := s.client.Enqueue(ctx, mailArgs{To: "ada@example.com"}, nil) // its worker completes it
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			row, err := s.client.Get(ctx, now.Job.ID)
			return err == nil && row.Status == sluice.StatusCompleted
		}, 10*time.Second, 20*time.Millisecond)
		later := &sluice.EnqueueOptions{RunAt: time.Now().Add(time.Hour)}
		for _, to := range []string{"ada@example.com", "ada@example.com", "bob@example.com"} {
			_, err := s.client.Enqueue(ctx, mailArgs{To: to}, later)
			require.NoError(t, err)
		}

		p := newPage(t)
		p.Eval(`String(location.href = "` + s.url + `#/jobs")`)
		p.Wait("the list", `document.querySelectorAll("tbody tr.row").length === 4`)
		p.Click("the filters", "details.more summary")
		// A live update re-renders the list halfway through the typing:
		// what was typed stays.
		p.Do("typing the path", chromedp.SendKeys(`input[name=payload]`, "to"))
		_, err = s.client.Enqueue(ctx, mailArgs{To: "carol@example.com"}, later)
		require.NoError(t, err)
		p.Wait("the new job", `document.querySelectorAll("tbody tr.row").length === 5`)
		require.Equal(t, "to", p.Eval(`document.querySelector("input[name=payload]").value`))
		p.Do("filtering by payload", chromedp.SendKeys(`input[name=payload]`, " = ada@example.com"+kb.Enter))
		p.Wait("ada's jobs", `location.hash.includes("payload.to=ada%40example.com") && document.querySelectorAll("tbody tr.row").length === 3`)
		require.Contains(t, p.Eval(text(".page-head .sub")), "3 matching")
		p.screenshot(dir, "payload-filter.png")

		clear(p, `input[name=payload]`)
		p.Expect("api/jobs?payload.to..x=1")
		p.Do("a malformed path", chromedp.SendKeys(`input[name=payload]`, "to..x = 1"+kb.Enter))
		p.Wait("the API's refusal", text("main")+`.includes("payload[\"to..x\"]")`)
		clear(p, `input[name=payload]`)
		p.Do("a condition without a value", chromedp.SendKeys(`input[name=payload]`, "to"+kb.Enter))
		p.Wait("the field's error", text(".field-error")+`.includes("is not path = value")`)

		// One job a page, so that "Select all matching" is offered.
		p.Eval(`String(location.hash = "#/jobs?payload.to=ada%40example.com&limit=1")`)
		p.Wait("one row of three", `document.querySelectorAll("tbody tr.row").length === 1 && `+text(".page-head .sub")+` === "3 matching"`)
		p.Click("the row's checkbox", "tbody tr.row input[type=checkbox]")
		p.Click("Select all matching", ".bulkbar button.ghost")
		p.Wait("all three selected", text(".bulkbar strong")+` === "3 selected"`)
		p.Click("Cancel", ".bulkbar button[data-action=cancel]")
		p.Wait("the count", `!!document.querySelector("dialog[open]")`)
		require.Equal(t, "Cancel 2 jobs?", p.Eval(text("dialog[open] h2")))
		require.Contains(t, p.Eval(text("dialog[open] .d-body")), "Of the 3 jobs matching, 2 are pending or processing")
		p.screenshot(dir, "bulk-count.png")
		p.Click("the dialog's confirm button", "dialog[open] .d-foot button:last-child")
		p.Wait("the dialog to close", `!document.querySelector("dialog[open]")`)
		require.Eventually(t, func() bool {
			res, err := s.client.List(ctx, &sluice.ListFilter{JobFilter: sluice.JobFilter{
				Statuses: []sluice.JobStatus{sluice.StatusCancelled}, Payload: map[string]any{"to": "ada@example.com"}}})
			return err == nil && res.Total == 2
		}, 10*time.Second, 20*time.Millisecond)
		row, err := s.client.Get(ctx, now.Job.ID)
		require.NoError(t, err)
		require.Equal(t, sluice.StatusCompleted, row.Status, "the completed job is left as it was")
		require.Empty(t, p.Errors(), "the console's errors")
	})
}

// TestEnqueueForm enqueues a job through the jobs page's form: a payload
// that is not JSON is caught before it is sent, the job is created with
// every field given, and the page opens it. With AllowedTopics the form
// refuses another topic; read-only, it is not offered.
func TestEnqueueForm(t *testing.T) {
	onBothDrivers(t, func(t *testing.T, s *server, _ *fixture) {
		dir := shots(t, "TestEnqueueForm")
		p := newPage(t)
		p.Eval(`String(location.href = "` + s.url + `#/jobs")`)
		p.Click("New job", "[data-testid=new-job]")
		p.Wait("the form", `!!document.querySelector("dialog[open] #enqueue-form")`)
		clear(p, `dialog[open] textarea[name=payload]`)
		p.Do("filling it in", chromedp.SendKeys(`dialog[open] input[name=topic]`, "mail"),
			chromedp.SendKeys(`dialog[open] textarea[name=payload]`, `{"to": "form@example.com"`),
			chromedp.SendKeys(`dialog[open] input[name=queue]`, "default"),
			chromedp.SendKeys(`dialog[open] input[name=priority]`, "3"),
			chromedp.SendKeys(`dialog[open] input[name=delay]`, "1h"),
			chromedp.SendKeys(`dialog[open] input[name=unique_key]`, "form-1"),
			chromedp.SendKeys(`dialog[open] input[name=tags]`, "ops, manual"))
		p.Wait("the payload's error", text("dialog[open] .field-error")+`.includes("not JSON")`)
		require.Equal(t, "true", p.Eval(`String(document.querySelector("dialog[open] button[type=submit]").disabled)`))
		p.Do("closing the payload", chromedp.SendKeys(`dialog[open] textarea[name=payload]`, "}"))
		p.Wait("no error", `!document.querySelector("dialog[open] .field-error")`)
		p.screenshot(dir, "enqueue-form.png")
		p.Click("Enqueue", "dialog[open] button[type=submit]")
		p.Wait("the new job's page", `location.hash.startsWith("#/jobs/") && `+text("main h1")+` === "mail"`)
		id := p.Eval(`location.hash.slice("#/jobs/".length)`)
		row, err := s.client.Get(t.Context(), id)
		require.NoError(t, err)
		require.JSONEq(t, `{"to": "form@example.com"}`, string(row.Payload))
		require.Equal(t, 3, row.Priority)
		require.Equal(t, "form-1", row.UniqueKey)
		require.Equal(t, []string{"ops", "manual"}, row.Tags)
		require.WithinDuration(t, time.Now().Add(time.Hour), row.RunAt, time.Minute)
		require.Empty(t, p.Errors(), "the console's errors")
	})
	t.Run("AllowedTopics", func(t *testing.T) {
		fx := newFixture()
		fx.web = func(o *sluiceweb.Options) { o.AllowedTopics = []string{"mail"} }
		s := serveSQLite(t, fx)
		p := newPage(t)
		p.Eval(`String(location.href = "` + s.url + `#/jobs")`)
		p.Click("New job", "[data-testid=new-job]")
		p.Do("another topic", chromedp.SendKeys(`dialog[open] input[name=topic]`, "flaky"))
		p.Wait("the topic's error", text("dialog[open] .field-error")+`.includes("not one of the topics allowed here: mail")`)
		require.Equal(t, "true", p.Eval(`String(document.querySelector("dialog[open] button[type=submit]").disabled)`))
	})
	t.Run("ReadOnly", func(t *testing.T) {
		fx := newFixture()
		fx.web = func(o *sluiceweb.Options) { o.ReadOnly = true }
		s := serveSQLite(t, fx)
		p := newPage(t)
		p.Eval(`String(location.href = "` + s.url + `#/jobs")`)
		p.Wait("the list, read-only", text("[data-testid=read-only]")+` === "Read-only"`)
		require.Equal(t, "false", p.Eval(`String(!!document.querySelector("[data-testid=new-job]"))`), "no form to offer")
	})
}

// TestMetricsPage reads the metrics page after jobs of two topics ran,
// one failing: the table puts each topic with its failure rate and
// percentiles, the charts draw them, and the window is chosen in the URL.
func TestMetricsPage(t *testing.T) {
	fast := func(fx *fixture) {
		fx.configure = func(cfg *sluice.Config) { cfg.Metrics.Interval = time.Second }
	}
	onBothDriversWith(t, fast, func(t *testing.T, s *server, _ *fixture) {
		dir := shots(t, "TestMetricsPage")
		ctx := t.Context()
		for i := range 24 {
			_, err := s.client.Enqueue(ctx, mailArgs{To: fmt.Sprintf("user%d@example.com", i)}, nil)
			require.NoError(t, err)
		}
		for i := range 4 {
			_, err := s.client.Enqueue(ctx, flakyArgs{Order: i}, &sluice.EnqueueOptions{MaxRetries: sluice.NoRetries})
			require.NoError(t, err)
		}
		if dir != "" {
			history(t, s) // for the screenshot: an hour of a busier day
		}
		p := newPage(t)
		p.Eval(`String(location.href = "` + s.url + `#/metrics")`)
		mail, flaky := "24", "4"
		if dir != "" {
			mail, flaky = "2,172", "380" // with the history
		}
		p.Wait("both topics, written", `document.querySelectorAll(".metrics-table tr[data-topic]").length >= 2 && `+
			text(`.metrics-table tr[data-topic=mail] td:nth-child(2)`)+` === "`+mail+`" && `+
			text(`.metrics-table tr[data-topic=flaky] td:nth-child(2)`)+` === "`+flaky+`"`)
		if dir == "" {
			require.Equal(t, "100%", p.Eval(text(`.metrics-table tr[data-topic=flaky] td:nth-child(4)`)), "every flaky attempt failed")
			require.Equal(t, "0%", p.Eval(text(`.metrics-table tr[data-topic=mail] td:nth-child(4)`)))
		}
		topics := p.Eval(`String(document.querySelectorAll(".metrics-table tr[data-topic]").length)`)
		require.Equal(t, p.Eval(`String(2 * `+topics+`)`), p.Eval(`String(document.querySelectorAll(".metrics-grid svg.chart").length)`),
			"two charts a topic")
		p.Click("the day's window", `.seg button:nth-child(3)`)
		p.Wait("the day", `location.hash.includes("window=24h") && document.querySelectorAll(".metrics-table tr[data-topic]").length === `+topics)
		p.Click("the hour's window", `.seg button:nth-child(1)`)
		p.Wait("the hour", `location.hash.includes("window=1h")`)
		p.screenshot(dir, "metrics.png")
		p.Click("one topic", `.metrics-table tr[data-topic=mail] a`)
		p.Wait("mail alone", `location.hash.includes("topics=mail") && document.querySelectorAll(".metrics-grid section").length === 1`)
		require.Empty(t, p.Errors(), "the console's errors")
	})
}

// clear empties the field selector finds, as selecting its text and
// deleting it would: the page hears an input event.
func clear(p *page, selector string) {
	p.Eval(`(() => { const el = document.querySelector(` + "`" + selector + "`" + `); el.value = "";
		return String(el.dispatchEvent(new Event("input", { bubbles: true }))); })()`)
}

// history writes an hour of the metrics store as a busier day leaves it:
// mail fast and steady, flaky failing a tenth of its attempts, and reports
// slow, slower in the hour's middle.
func history(t *testing.T, s *server) {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Minute)
	var points []driver.MetricsPoint
	add := func(topic string, at time.Time, completed, failed int64, d time.Duration) {
		p := driver.MetricsPoint{Topic: topic, Start: at, Completed: completed, Failed: failed}
		n := completed + failed
		// A spread around d: a tenth at a third of it, a tenth at three times.
		for i, share := range map[time.Duration]int64{d / 3: n / 10, d: n - 2*(n/10), 3 * d: n / 10} {
			p.Histogram[driver.MetricsBucketOf(i)] += share
			p.DurationSum += share * i.Microseconds()
		}
		points = append(points, p)
	}
	for m := 1; m <= 50; m++ {
		at := now.Add(-time.Duration(m) * time.Minute)
		add("mail", at, 40+int64(m%7), 0, 40*time.Millisecond)
		add("flaky", at, 5+int64(m%3), int64(1+m%2), 300*time.Millisecond)
		slow := 2 * time.Second
		if m > 15 && m < 30 {
			slow = 9 * time.Second
		}
		add("reports", at, 2, 0, slow)
	}
	require.NoError(t, s.exec.MetricsAdd(t.Context(), &driver.MetricsAddParams{Points: points}))
}
