package drivertest

import (
	"fmt"
	"slices"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func listCases[TTx any]() []testCase[TTx] {
	return []testCase[TTx]{
		// Each filter field selects what it says, alone and combined, in
		// both orders, and Total counts every selected job.
		{name: "Filter", twin: true, fn: testListFilter[TTx]},
		// Offset pages and cursor (AfterID) pages cover the selection
		// exactly once, in order; a cursor need not name an existing job.
		{name: "Paging", twin: true, fn: testListPaging[TTx]},
		// Payload conditions select by a JSON scalar at a path: strings
		// equal, numbers of equal value, true, false and null alike, never
		// a value of another type; text that breaks the text rule selects
		// nothing; stats and actions select the same jobs.
		{name: "Payload", twin: true, fn: testListPayload[TTx]},
	}
}

func statsCases[TTx any]() []testCase[TTx] {
	return []testCase[TTx]{
		// Counts by status, topic and queue match the stored jobs, under a
		// filter too.
		{name: "Counts", twin: true, fn: testStatsCounts[TTx]},
		// The window's outcomes count jobs finalized since Since, with the
		// mean and nearest-rank 95th percentile of completed jobs'
		// durations.
		{name: "Window", twin: true, fn: testStatsWindow[TTx]},
		// With a Bucket, the window's completed and failed jobs are
		// counted per bucket of FinalizedAt aligned on the epoch, oldest
		// first, empty buckets absent; without one, Series is nil.
		{name: "Series", twin: true, fn: testStatsSeries[TTx]},
		// With DueAt, the earliest RunAt of the selected pending jobs due
		// then, per queue, over every priority; waiting jobs and jobs due
		// later are not due. Without it, OldestDue is nil.
		{name: "OldestDue", twin: true, fn: testStatsOldestDue[TTx]},
		// Counts a driver keeps agree with counting the table after every
		// kind of write, in the writing transaction, and after a rollback.
		{name: "Kept", twin: true, fn: testStatsKept[TTx]},
	}
}

// fixtureStatuses are the statuses fixture gives the jobs of each group, by
// rank within the group.
var fixtureStatuses = [][]driver.JobStatus{
	{driver.StatusCompleted, driver.StatusProcessing, driver.StatusPending},
	{driver.StatusFailed, driver.StatusCompleted, driver.StatusPending},
	{driver.StatusCancelled, driver.StatusCompleted, driver.StatusPending},
}

// fixture stores 18 jobs in six groups of one queue and topic, of every
// status, with distinct created and run times and some unique keys, and
// returns them as stored. Completed job i ran for i seconds, from an hour
// after base.
func (h *harness[TTx]) fixture() []*driver.JobRow {
	h.t.Helper()
	started := h.at(time.Hour)
	var rows []*driver.JobRow
	for i := range 18 {
		j := h.newJob()
		j.Topic = fmt.Sprintf("insp_%d", i%3)
		j.Queue = []string{"default", "other"}[i%2]
		j.Priority = i
		j.CreatedAt = h.at(time.Duration(i) * time.Second)
		j.RunAt = h.at(time.Duration(i%5) * time.Minute)
		if i%4 == 0 {
			j.UniqueKey = fmt.Sprintf("key_%d", i)
		}
		row := h.insert(j)[0]
		status := fixtureStatuses[i%3][i/6]
		if status != driver.StatusPending {
			// Earlier jobs of the group are not pending, and this one has
			// the smallest priority of the rest: the claim takes it.
			row = h.claimJob(row, client1, started, started.Add(time.Hour))
		}
		if status.Finished() {
			h.finalize(ending(row, status, started.Add(time.Duration(i)*time.Second)))
			row = h.get(row.ID)
		}
		require.Equal(h.t, status, row.Status, "fixture job %d", i)
		rows = append(rows, row)
	}
	return rows
}

// matches reports whether f selects r.
func matches(f *driver.JobFilter, r *driver.JobRow) bool {
	inRange := func(t, from, before time.Time) bool {
		return (from.IsZero() || !t.Before(from)) && (before.IsZero() || t.Before(before))
	}
	return (len(f.Statuses) == 0 || slices.Contains(f.Statuses, r.Status)) &&
		(len(f.Topics) == 0 || slices.Contains(f.Topics, r.Topic)) &&
		(len(f.Queues) == 0 || slices.Contains(f.Queues, r.Queue)) &&
		(f.UniqueKey == "" || f.UniqueKey == r.UniqueKey) &&
		inRange(r.CreatedAt, f.CreatedFrom, f.CreatedBefore) &&
		inRange(r.RunAt, f.RunAtFrom, f.RunAtBefore)
}

// selected returns the IDs of the rows f selects, ascending or descending.
func selected(rows []*driver.JobRow, f *driver.JobFilter, desc bool) []string {
	out := []string{}
	for _, r := range rows {
		if matches(f, r) {
			out = append(out, r.ID)
		}
	}
	slices.Sort(out)
	if desc {
		slices.Reverse(out)
	}
	return out
}

// filters returns filters exercising every field of JobFilter.
func (h *harness[TTx]) filters() map[string]*driver.JobFilter {
	return map[string]*driver.JobFilter{
		"None":      {},
		"Statuses":  {Statuses: []driver.JobStatus{driver.StatusFailed, driver.StatusPending}},
		"Topics":    {Topics: []string{"insp_0", "insp_2"}},
		"Queues":    {Queues: []string{"other"}},
		"UniqueKey": {UniqueKey: "key_8"},
		"Created":   {CreatedFrom: h.at(3 * time.Second), CreatedBefore: h.at(11 * time.Second)},
		"RunAt":     {RunAtFrom: h.at(time.Minute), RunAtBefore: h.at(3 * time.Minute)},
		"Combined": {
			Statuses: []driver.JobStatus{driver.StatusCompleted, driver.StatusPending},
			Queues:   []string{"default"}, Topics: []string{"insp_1", "insp_2"},
			CreatedFrom: h.at(time.Second), RunAtBefore: h.at(4 * time.Minute),
		},
		"Nothing": {Statuses: []driver.JobStatus{driver.StatusProcessing}, Queues: []string{"nope"}},
	}
}

// listVia lists through ex.
func (h *harness[TTx]) listVia(ex driver.Executor, p *driver.JobListParams) *driver.JobListResult {
	h.t.Helper()
	res, err := ex.JobList(h.ctx, p)
	require.NoError(h.t, err, "JobList")
	require.NotNil(h.t, res, "JobList")
	return res
}

// withWaiting adds to rows, fixture's, a job waiting for one of them, due
// within the RunAt filter's range: a filter selects it by the time it is
// to run at (JobRow.RunAt), not the time that keeps claims off it.
func (h *harness[TTx]) withWaiting(rows []*driver.JobRow) []*driver.JobRow {
	w := h.waiter(driver.DependencyCancel, rows[12].ID) // pending
	w.Topic, w.RunAt = "insp_1", h.at(2*time.Minute)
	return append(rows, h.insert(w)[0])
}

func testListFilter[TTx any](h *harness[TTx], m mode) {
	rows := h.withWaiting(h.fixture())
	byID := map[string]*driver.JobRow{}
	for _, r := range rows {
		byID[r.ID] = r
	}
	for name, f := range h.filters() {
		for _, desc := range []bool{false, true} {
			want := selected(rows, f, desc)
			var res *driver.JobListResult
			h.via(m, func(ex driver.Executor) {
				res = h.listVia(ex, &driver.JobListParams{Filter: *f, Desc: desc, Limit: 100})
			})
			msg := fmt.Sprintf("filter %s, desc %v", name, desc)
			require.Equal(h.t, want, ids(res.Jobs), msg)
			require.Equal(h.t, len(want), res.Total, msg+": Total")
			for _, got := range res.Jobs {
				requireRow(h.t, byID[got.ID], got)
			}
		}
	}
	// Limit cuts the page, never the total.
	f := h.filters()["Queues"]
	want := selected(rows, f, true)
	var res *driver.JobListResult
	h.via(m, func(ex driver.Executor) {
		res = h.listVia(ex, &driver.JobListParams{Filter: *f, Desc: true, Limit: 2})
	})
	require.Equal(h.t, want[:2], ids(res.Jobs), "limited page")
	require.Equal(h.t, len(want), res.Total, "Total of a limited page")
}

func testListPaging[TTx any](h *harness[TTx], m mode) {
	rows := h.fixture()
	f := driver.JobFilter{Statuses: []driver.JobStatus{driver.StatusCompleted, driver.StatusPending, driver.StatusFailed}}
	for _, desc := range []bool{false, true} {
		want := selected(rows, &f, desc)
		byOffset, byCursor := []string{}, []string{}
		h.via(m, func(ex driver.Executor) {
			for off := 0; off < len(want)+3; off += 3 {
				page := h.listVia(ex, &driver.JobListParams{Filter: f, Desc: desc, Offset: off, Limit: 3})
				require.Equal(h.t, len(want), page.Total, "Total at offset %d", off)
				byOffset = append(byOffset, ids(page.Jobs)...)
			}
			after := ""
			for range len(want) + 1 {
				page := h.listVia(ex, &driver.JobListParams{Filter: f, Desc: desc, AfterID: after, Limit: 4})
				require.Equal(h.t, len(want), page.Total, "Total after %q", after)
				if len(page.Jobs) == 0 {
					break
				}
				byCursor = append(byCursor, ids(page.Jobs)...)
				after = page.Jobs[len(page.Jobs)-1].ID
			}
		})
		require.Equal(h.t, want, byOffset, "offset pages, desc %v", desc)
		require.Equal(h.t, want, byCursor, "cursor pages, desc %v", desc)

		// A cursor that names no job starts after where it would be.
		cursor := newID()
		wantAfter := []string{}
		for _, id := range want {
			if (!desc && id > cursor) || (desc && id < cursor) {
				wantAfter = append(wantAfter, id)
			}
		}
		var page *driver.JobListResult
		h.via(m, func(ex driver.Executor) {
			page = h.listVia(ex, &driver.JobListParams{Filter: f, Desc: desc, AfterID: cursor, Limit: 100})
		})
		require.Equal(h.t, wantAfter, ids(page.Jobs), "after an unknown ID, desc %v", desc)
	}
}

// statsVia reads stats through ex.
func (h *harness[TTx]) statsVia(ex driver.Executor, p *driver.JobStatsParams) *driver.JobStats {
	h.t.Helper()
	st, err := ex.JobStats(h.ctx, p)
	require.NoError(h.t, err, "JobStats")
	require.NotNil(h.t, st, "JobStats")
	return st
}

func testStatsCounts[TTx any](h *harness[TTx], m mode) {
	rows := h.withWaiting(h.fixture())
	for name, f := range h.filters() {
		want := map[driver.JobCount]bool{}
		counts := map[driver.JobCount]int{}
		for _, r := range rows {
			if matches(f, r) {
				counts[driver.JobCount{Status: r.Status, Topic: r.Topic, Queue: r.Queue}]++
			}
		}
		for c, n := range counts {
			c.Count = n
			want[c] = true
		}
		var st *driver.JobStats
		h.via(m, func(ex driver.Executor) {
			st = h.statsVia(ex, &driver.JobStatsParams{Filter: *f, Since: h.base})
		})
		got := map[driver.JobCount]bool{}
		for _, c := range st.Counts {
			require.False(h.t, got[c], "filter %s: count %+v repeated", name, c)
			got[c] = true
		}
		require.Equal(h.t, want, got, "filter %s: counts", name)
	}
}

func testStatsWindow[TTx any](h *harness[TTx], m mode) {
	rows := h.fixture()
	filters := h.filters()
	for _, name := range []string{"None", "Queues", "Topics", "Nothing"} {
		f := filters[name]
		for _, since := range []time.Duration{0, 5 * time.Second, 13 * time.Second, time.Hour} {
			sinceAt := h.at(time.Hour + since)
			var completed, failed int
			var durs []time.Duration
			for _, r := range rows {
				if !matches(f, r) || r.FinalizedAt.Before(sinceAt) {
					continue
				}
				switch r.Status {
				case driver.StatusCompleted:
					completed++
					durs = append(durs, r.FinalizedAt.Sub(r.AttemptedAt))
				case driver.StatusFailed:
					failed++
				}
			}
			var avg, p95 time.Duration
			if len(durs) > 0 {
				slices.Sort(durs)
				var sum time.Duration
				for _, d := range durs {
					sum += d
				}
				avg = sum / time.Duration(len(durs))
				p95 = durs[(len(durs)*95+99)/100-1]
			}
			var st *driver.JobStats
			h.via(m, func(ex driver.Executor) {
				st = h.statsVia(ex, &driver.JobStatsParams{Filter: *f, Since: sinceAt})
			})
			msg := fmt.Sprintf("filter %s, since %s", name, since)
			require.Equal(h.t, completed, st.Completed, msg+": Completed")
			require.Equal(h.t, failed, st.Failed, msg+": Failed")
			require.Equal(h.t, avg, st.AvgDuration, msg+": AvgDuration")
			require.Equal(h.t, p95, st.P95Duration, msg+": P95Duration")
		}
	}
}
