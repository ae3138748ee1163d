// Package browsertest drives the Jobs panel of the PocketBase admin UI in a
// real headless Chromium, against a real PocketBase app with sluicepb: it
// logs in as a superuser, opens Jobs from the header, opens a failed job in
// the dashboard and requeues it, and sees it complete; it also opens the
// standalone Jobs page with the same session.
//
// It is a module of its own, so that sluicepb's users never get chromedp
// in their module graph. Run it from this directory with Go 1.27:
//
//	GOTOOLCHAIN=go1.27.4 go test -race ./...
//
// It needs Chromium (Debian's chromium package; SLUICE_CHROMIUM names
// another binary) and fails without it.
package browsertest
