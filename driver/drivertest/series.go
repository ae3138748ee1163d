package drivertest

import (
	"fmt"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func testStatsSeries[TTx any](h *harness[TTx], m mode) {
	rows := h.fixture()
	filters := h.filters()
	for _, name := range []string{"None", "Queues", "Topics", "Nothing"} {
		f := filters[name]
		for _, bucket := range []time.Duration{time.Second, 7 * time.Second, time.Minute} {
			since := h.at(time.Hour + 3*time.Second)
			want := []driver.JobBucket{}
			for _, r := range rows {
				if !matches(f, r) || r.FinalizedAt.Before(since) ||
					r.Status != driver.StatusCompleted && r.Status != driver.StatusFailed {
					continue
				}
				start := time.UnixMicro(r.FinalizedAt.UnixMicro() / bucket.Microseconds() * bucket.Microseconds()).UTC()
				if n := len(want); n == 0 || !want[n-1].Start.Equal(start) {
					want = append(want, driver.JobBucket{Start: start})
				}
				if r.Status == driver.StatusCompleted {
					want[len(want)-1].Completed++
				} else {
					want[len(want)-1].Failed++
				}
			}
			var st *driver.JobStats
			h.via(m, func(ex driver.Executor) {
				st = h.statsVia(ex, &driver.JobStatsParams{Filter: *f, Since: since, Bucket: bucket})
			})
			require.Equal(h.t, want, st.Series, fmt.Sprintf("filter %s, bucket %s", name, bucket))
		}
	}
	st := h.statsVia(h.exec(), &driver.JobStatsParams{Since: h.base})
	require.Nil(h.t, st.Series, "Series without a Bucket")
}

func testStatsOldestDue[TTx any](h *harness[TTx], m mode) {
	rows := h.withWaiting(h.fixture())
	// A job of the smallest priority, due last: the oldest due job of its
	// queue is found among the other priorities.
	late := h.newJob()
	late.Topic, late.Queue, late.Priority, late.RunAt = "insp_0", "other", -5, h.at(time.Hour)
	rows = append(rows, h.insert(late)[0])
	filters := h.filters()
	for _, name := range []string{"None", "Queues", "Topics", "Statuses", "Combined", "Nothing"} {
		f := filters[name]
		for _, dueAt := range []time.Duration{-time.Minute, 0, 90 * time.Second, 3 * time.Minute, 2 * time.Hour} {
			due := h.at(dueAt)
			want := map[string]time.Time{}
			for _, r := range rows {
				if !matches(f, r) || r.Status != driver.StatusPending || r.Waiting || r.RunAt.After(due) {
					continue
				}
				if old, ok := want[r.Queue]; !ok || r.RunAt.Before(old) {
					want[r.Queue] = r.RunAt
				}
			}
			var st *driver.JobStats
			h.via(m, func(ex driver.Executor) {
				st = h.statsVia(ex, &driver.JobStatsParams{Filter: *f, Since: h.base, DueAt: due})
			})
			require.Equal(h.t, want, st.OldestDue, fmt.Sprintf("filter %s, due at base%+v", name, dueAt))
		}
	}
	st := h.statsVia(h.exec(), &driver.JobStatsParams{Since: h.base})
	require.Nil(h.t, st.OldestDue, "OldestDue without DueAt")
}
