package drivertest

import (
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func cleanCases[TTx any]() []testCase[TTx] {
	return []testCase[TTx]{
		// Clean deletes jobs of one final status finalized before the
		// cut-off, and nothing else.
		{name: "Selects", twin: true, fn: testCleanSelects[TTx]},
		// Clean deletes at most Limit jobs per call.
		{name: "Limit", twin: true, fn: testCleanLimit[TTx]},
		// Topics and Queues narrow what Clean deletes, NotTopics and
		// NotQueues leave jobs out; text that breaks the text rule
		// selects nothing, and leaves out nothing.
		{name: "Narrowed", twin: true, fn: testCleanNarrowed[TTx]},
		// Cleaners running at once delete every old job exactly once,
		// without errors.
		{name: "Concurrent", fn: testCleanConcurrent[TTx]},
	}
}

// finished stores n jobs completed at at, and returns them.
func (h *harness[TTx]) finished(n int, at time.Time) []*driver.JobRow {
	h.t.Helper()
	topic := "clean_" + newID()[:8]
	h.insert(h.jobs(n, topic)...)
	p := claimParams(h.base, topic)
	p.Limit = n
	rows := h.claimVia(h.exec(), p)
	require.Len(h.t, rows, n, "claimed")
	items := make([]*driver.JobFinalize, n)
	for i, r := range rows {
		items[i] = ending(r, driver.StatusCompleted, at)
	}
	h.finalize(items...)
	return rows
}

// finishedIn stores n jobs of topic in queue completed at at, and returns
// their IDs.
func (h *harness[TTx]) finishedIn(n int, topic, queue string, at time.Time) []string {
	h.t.Helper()
	jobs := h.jobs(n, topic)
	for _, j := range jobs {
		j.Queue = queue
	}
	h.insert(jobs...)
	p := claimParams(h.base, topic)
	p.Queue = queue
	rows := h.claimVia(h.exec(), p)
	require.Len(h.t, rows, n, "claimed")
	ids := make([]string, n)
	for i, r := range rows {
		h.finalize(ending(r, driver.StatusCompleted, at))
		ids[i] = r.ID
	}
	return ids
}

// cleanVia cleans through ex as mode m says.
func (h *harness[TTx]) cleanVia(m mode, p *driver.JobCleanParams) int {
	h.t.Helper()
	var n int
	h.via(m, func(ex driver.Executor) {
		var err error
		n, err = ex.JobClean(h.ctx, p)
		require.NoError(h.t, err, "JobClean")
	})
	return n
}

func testCleanSelects[TTx any](h *harness[TTx], m mode) {
	z := h.zoo() // finished jobs were finalized at base+1s
	cut := h.at(time.Second)
	// FinalizedAt must be strictly before the cut-off.
	require.Equal(h.t, 0, h.cleanVia(m, &driver.JobCleanParams{Status: driver.StatusFailed, Before: cut, Limit: 10}))
	n := h.cleanVia(m, &driver.JobCleanParams{Status: driver.StatusFailed, Before: cut.Add(time.Microsecond), Limit: 10})
	require.Equal(h.t, 1, n)
	h.requireNotFound(z["failed"].ID)
	for kind, r := range z {
		if kind != "failed" {
			h.requireStored(r)
		}
	}
}

func testCleanLimit[TTx any](h *harness[TTx], m mode) {
	rows := h.finished(5, h.at(time.Second))
	p := &driver.JobCleanParams{Status: driver.StatusCompleted, Before: h.at(time.Minute), Limit: 2}
	for _, want := range []int{2, 2, 1, 0} {
		require.Equal(h.t, want, h.cleanVia(m, p))
	}
	for _, r := range rows {
		h.requireNotFound(r.ID)
	}
}

func testCleanConcurrent[TTx any](h *harness[TTx], _ mode) {
	const n, cleaners = 60, 4
	h.finished(n, h.at(time.Second))
	keep := h.insert(h.newJob())[0]
	p := &driver.JobCleanParams{Status: driver.StatusCompleted, Before: h.at(time.Minute), Limit: 4}
	var (
		wg     sync.WaitGroup
		errs   = make([]error, cleaners)
		totals = make([]int, cleaners)
	)
	for i := range cleaners {
		wg.Go(func() {
			for {
				got, err := h.exec().JobClean(h.ctx, p)
				if err != nil || got == 0 {
					errs[i] = err
					return
				}
				totals[i] += got
			}
		})
	}
	wg.Wait()
	total := 0
	for i := range cleaners {
		require.NoError(h.t, errs[i], "cleaner %d", i)
		total += totals[i]
	}
	require.Equal(h.t, n, total, "jobs deleted in all")
	h.requireStored(keep)
}

func testCleanNarrowed[TTx any](h *harness[TTx], m mode) {
	at, cut := h.at(time.Second), h.at(time.Minute)
	tag := newID()[:8]
	a, b := "clean_a_"+tag, "clean_b_"+tag
	sets := map[string][]string{
		"a/default": h.finishedIn(2, a, "default", at), "a/other": h.finishedIn(2, a, "other", at),
		"b/default": h.finishedIn(2, b, "default", at), "b/other": h.finishedIn(2, b, "other", at),
	}
	gone := map[string]bool{}
	clean := func(p driver.JobCleanParams, want int, deletes ...string) {
		h.t.Helper()
		p.Status, p.Before, p.Limit = driver.StatusCompleted, cut, 100
		p.Topics, p.NotTopics = append(p.Topics, "\x00"), append(p.NotTopics, "\xff")
		if len(p.Topics) == 1 {
			p.Topics = nil
		}
		require.Equal(h.t, want, h.cleanVia(m, &p), "%+v", p)
		for _, set := range deletes {
			gone[set] = true
		}
		for set, ids := range sets {
			for _, id := range ids {
				if gone[set] {
					h.requireNotFound(id)
				} else {
					require.Equal(h.t, driver.StatusCompleted, h.get(id).Status, set)
				}
			}
		}
	}
	// Topics [x00] alone breaks the text rule: nothing is selected.
	require.Equal(h.t, 0, h.cleanVia(m, &driver.JobCleanParams{Status: driver.StatusCompleted, Before: cut, Limit: 100,
		Topics: []string{"\x00"}}))
	clean(driver.JobCleanParams{Topics: []string{a}, Queues: []string{"other"}}, 2, "a/other")
	clean(driver.JobCleanParams{Topics: []string{a, b}, NotQueues: []string{"other"}}, 4, "a/default", "b/default")
	clean(driver.JobCleanParams{Topics: []string{b}, NotTopics: []string{a}}, 2, "b/other")
}
