package browsertest

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
)

// keys sets a limit on each key of the sync queue through its form, sees
// its keys run no more than it allows, fails the first job of a held
// sequence and sees the next one held behind it, then deletes the jobs.
func keys(t *testing.T, p *page, s *server, fx *fixture, dir string) {
	ctx := t.Context()
	p.Eval(`String(location.hash = "#/queues")`)
	p.Wait("no keys yet", `!!document.querySelector("[data-testid=no-keys]")`)
	p.Click("Key limits of sync", "button[data-edit-keys=sync]")
	p.Wait("the form", `!!document.querySelector("#keys-form")`)
	p.Do("filling the form",
		chromedp.SendKeys(`#keys-form input[name=max_running]`, "1"),
		chromedp.Click(`#keys-form fieldset button`, chromedp.NodeVisible)) // Add a key
	p.Do("giving globex its own limit",
		chromedp.SendKeys(`#keys-form input[name=key]`, "globex"),
		chromedp.SendKeys(`#keys-form input[name=key_max_running]`, "2"))
	p.Click("Save", `dialog[open] button[type=submit]`)
	p.Wait("the keys of sync", `!!document.querySelector("[data-keys-queue=sync]")`)
	require.Contains(t, p.Eval(text("[data-keys-queue=sync] [data-testid=key-limits]")), "each key at most 1 running")
	stored, err := s.client.StoredLimits(ctx)
	require.NoError(t, err)
	require.Len(t, stored, 1)
	require.Equal(t, sluice.QueueScope("sync"), stored[0].Scope)
	require.Equal(t, 1, stored[0].KeyMaxRunning)
	require.Equal(t, []driver.KeyLimit{{Key: "globex", MaxRunning: 2}}, stored[0].Keys)

	for _, account := range []string{"acme", "acme", "acme", "globex", "globex", "globex"} {
		_, err := s.client.Enqueue(ctx, syncArgs{Account: account}, &sluice.EnqueueOptions{Queue: "sync", Key: account})
		require.NoError(t, err)
	}
	// row is the expression of the cells of a key's row, joined by "|".
	row := func(key string) string {
		return `[...document.querySelectorAll("[data-keys-queue=sync] tr[data-key=` + key + `] td")].map((td) => td.textContent.trim()).join("|")`
	}
	p.Wait("acme at its limit", row("acme")+` === "acme|2|1 at limit|1|–|–"`)
	p.Wait("globex at its own", row("globex")+` === "globex|1|2 at limit|2 own|–|–"`)

	// A held sequence: its first job fails for good, the next waits.
	first, err := s.client.Enqueue(ctx, syncArgs{Account: "initech", Fail: true}, &sluice.EnqueueOptions{Queue: "sync", Key: "initech",
		Sequence: sluice.SequenceHold, MaxRetries: sluice.NoRetries})
	require.NoError(t, err)
	next, err := s.client.Enqueue(ctx, syncArgs{Account: "initech"}, &sluice.EnqueueOptions{Queue: "sync", Key: "initech", Sequence: sluice.SequenceHold})
	require.NoError(t, err)
	p.Wait("initech's next job waiting", row("initech")+` === "initech|1|0|1|–|–"`)

	// The limits of a topic, set elsewhere, are shown too.
	_, err = s.client.SetTopicLimits(ctx, "sync", sluice.TopicLimits{MaxRunning: 20})
	require.NoError(t, err)
	_, err = s.client.SetKeyLimits(ctx, sluice.TopicScope("sync"), sluice.KeyLimits{RateLimit: 100, RatePeriod: time.Minute,
		Sequence: sluice.SequenceContinue})
	require.NoError(t, err)
	p.Wait("the topic's limits", text("tr[data-topic=sync]")+`.includes("each key at most 100 started per 1m · sequence continue")`)
	require.Contains(t, p.Eval(text("tr[data-topic=sync]")), "at most 20 running")
	p.Do("scrolling to the keys", chromedp.Evaluate[chromedp.Void](`document.querySelector("[data-keys-queue=sync]").scrollIntoView({block: "center"})`))
	p.screenshot(dir, "queue-keys.png")

	p.Click("acme's jobs", `tr[data-key=acme] a`)
	p.Wait("acme's jobs", `location.hash.includes("keys=acme") && document.querySelectorAll("tbody tr.row").length === 3`)
	require.Equal(t, "acme", p.Eval(`document.querySelector(".more input[name=keys]").value`), "the filter's field")

	require.Eventually(t, func() bool {
		j, err := s.client.Get(ctx, first.Job.ID)
		return err == nil && j.Status == sluice.StatusFailed
	}, 10*time.Second, 20*time.Millisecond)
	p.Eval(`String(location.hash = "#/jobs/` + next.Job.ID + `")`)
	p.Wait("what holds the job", text("[data-testid=explain-reason]")+` === "sequence"`)
	require.Equal(t, "pending", p.Eval(text(".job-title .badge")))
	require.Equal(t, "#/jobs/"+first.Job.ID, p.Eval(`document.querySelector("[data-testid=explain-ahead]").getAttribute("href")`))
	require.Equal(t, "initech", p.Eval(text("[data-testid=job-key]")))
	require.Equal(t, "hold", p.Eval(text("[data-testid=job-sequence]")))
	p.screenshot(dir, "job-sequence.png")

	// The sync jobs end, and are deleted so that the lists keep their
	// counts.
	p.Eval(`String(location.hash = "#/queues")`)
	close(fx.release)
	require.Eventually(t, func() bool {
		_, err := s.client.DeleteMany(ctx, &sluice.JobFilter{Topics: []string{"sync"},
			Statuses: []sluice.JobStatus{sluice.StatusPending, sluice.StatusCompleted, sluice.StatusFailed}})
		res, lerr := s.client.List(ctx, &sluice.ListFilter{JobFilter: sluice.JobFilter{Topics: []string{"sync"}}})
		return err == nil && lerr == nil && res.Total == 0
	}, 10*time.Second, 50*time.Millisecond)
	p.Wait("no keys waiting or running", `!document.querySelector("[data-keys-queue=sync] tr[data-key=acme]")`)
}
