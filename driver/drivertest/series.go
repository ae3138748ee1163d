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
