// Package browsertest drives the sluice dashboard in a real headless
// Chromium, against a real server over SQLite and Postgres: it filters the
// jobs list, opens a failed job, requeues it and sees it complete, watches a
// running job's progress and logs arrive, cancels it, pauses and resumes a
// queue, shows what a waiting job waits for, watches a workflow's graph
// change as its tasks run, fail and are retried, cancels a batch, and
// saves the screenshots shown in the README and docs/web.md.
//
// It is a module of its own, so that the root module's users never get
// chromedp in their module graph. Run it from this directory:
//
//	go test -race ./...
//
// It needs Chromium (Debian's chromium package; SLUICE_CHROMIUM names
// another binary) and fails without it. The Postgres run needs
// SLUICE_TEST_DATABASE_URL, as the root module's tests do.
package browsertest
