package drivertest

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func metricsCases[TTx any]() []testCase[TTx] {
	return []testCase[TTx]{
		// Adds sum into the point of their topic and minute; a read sums
		// the window's points per topic and bucket, of the topics asked
		// for (text that breaks the text rule names none), buckets of
		// whole hours alike; a clean deletes the points before its time.
		{name: "AddReadClean", twin: true, fn: testMetricsAddReadClean[TTx]},
	}
}

// hour returns the whole hour of base plus d: a point's minutes are whole.
func (h *harness[TTx]) hour(d time.Duration) time.Time { return h.base.Truncate(time.Hour).Add(d) }

// point returns a point of topic at minute m of base's hour, with
// completed and failed attempts, each of duration d.
func (h *harness[TTx]) point(topic string, m int, completed, failed int64, d time.Duration) driver.MetricsPoint {
	p := driver.MetricsPoint{Topic: topic, Start: h.hour(time.Duration(m) * time.Minute), Completed: completed, Failed: failed}
	p.DurationSum = (completed + failed) * d.Microseconds()
	p.Histogram[driver.MetricsBucketOf(d)] = completed + failed
	return p
}

func testMetricsAddReadClean[TTx any](h *harness[TTx], m mode) {
	add := func(points ...driver.MetricsPoint) {
		h.t.Helper()
		h.via(m, func(ex driver.Executor) {
			require.NoError(h.t, ex.MetricsAdd(h.ctx, &driver.MetricsAddParams{Points: points}))
		})
	}
	read := func(p *driver.MetricsReadParams) []driver.MetricsPoint {
		h.t.Helper()
		var out []driver.MetricsPoint
		h.via(m, func(ex driver.Executor) {
			var err error
			out, err = ex.MetricsRead(h.ctx, p)
			require.NoError(h.t, err)
		})
		return out
	}
	add(h.point("mail", 0, 10, 1, 20*time.Millisecond), h.point("mail", 1, 5, 0, 2*time.Second),
		h.point("pay", 0, 1, 1, time.Millisecond))
	add(h.point("mail", 0, 2, 2, 20*time.Millisecond)) // a second writer's, into the same minute
	add(h.point("mail", 7, 1, 0, time.Hour))

	mail0 := h.point("mail", 0, 12, 3, 20*time.Millisecond)
	byMinute := read(&driver.MetricsReadParams{From: h.hour(0), To: h.hour(10 * time.Minute), Bucket: time.Minute})
	require.Equal(h.t, []driver.MetricsPoint{mail0, h.point("mail", 1, 5, 0, 2*time.Second), h.point("mail", 7, 1, 0, time.Hour),
		h.point("pay", 0, 1, 1, time.Millisecond)}, byMinute)

	five := read(&driver.MetricsReadParams{Topics: []string{"mail", "nope\x00"}, From: h.hour(0), To: h.hour(10 * time.Minute),
		Bucket: 5 * time.Minute})
	want := mail0
	want.Completed += 5
	want.DurationSum += 5 * (2 * time.Second).Microseconds()
	want.Histogram[driver.MetricsBucketOf(2*time.Second)] += 5
	require.Equal(h.t, []driver.MetricsPoint{want, h.point("mail", 5, 1, 0, time.Hour)}, five)

	// Buckets of whole hours read the hours' sums: the same figures.
	hourly := read(&driver.MetricsReadParams{From: h.hour(0), To: h.hour(2 * time.Hour), Bucket: time.Hour})
	wantMail := want
	wantMail.Completed++
	wantMail.DurationSum += time.Hour.Microseconds()
	wantMail.Histogram[driver.MetricsBucketOf(time.Hour)]++
	require.Equal(h.t, []driver.MetricsPoint{wantMail, h.point("pay", 0, 1, 1, time.Millisecond)}, hourly)

	require.Empty(h.t, read(&driver.MetricsReadParams{Topics: []string{"\xff"}, From: h.hour(0), To: h.hour(time.Hour), Bucket: time.Minute}))
	require.Len(h.t, read(&driver.MetricsReadParams{From: h.hour(time.Minute), To: h.hour(7 * time.Minute), Bucket: time.Minute}), 1,
		"From is included, To excluded")

	var n int
	h.via(m, func(ex driver.Executor) {
		var err error
		n, err = ex.MetricsClean(h.ctx, &driver.MetricsCleanParams{Before: h.hour(time.Minute)})
		require.NoError(h.t, err)
	})
	require.Equal(h.t, 4, n, "mail's and pay's first minutes, and their hours")
	require.Len(h.t, read(&driver.MetricsReadParams{From: h.hour(0), To: h.hour(time.Hour), Bucket: time.Minute}), 2)
}
