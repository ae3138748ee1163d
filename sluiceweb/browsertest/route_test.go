package browsertest

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestRouteChangedAsTheDashboardStarts changes the route the moment the
// dashboard first renders, before it has had a chance to listen for route
// changes, as a page that embeds the dashboard in a frame may (PocketBase's
// Jobs panel opens a job so). The dashboard shows the new route all the
// same.
func TestRouteChangedAsTheDashboardStarts(t *testing.T) {
	s := serveSQLite(t, newFixture())
	p := newPage(t)
	p.OnNewDocument(`new MutationObserver((_, seen) => {
		if (document.querySelector("nav a[href='#/jobs']")) {
			seen.disconnect();
			location.hash = "#/jobs";
		}
	}).observe(document, { childList: true, subtree: true });`)
	p.Do("loading the dashboard", chromedp.Navigate(s.url))
	p.Wait("the route changed", `location.hash === "#/jobs"`)
	p.Wait("the Jobs page", text("main h1")+` === "Jobs" && `+text(`nav a[aria-current="page"]`)+` === "Jobs"`)
	require.Empty(t, p.Errors(), "the console's errors")
}
