package sluiceweb

import (
	"net/http"
	"time"

	"github.com/sluicehq/sluice"
)

// metricsResponse answers GET api/metrics: sluice.Metrics with durations
// in milliseconds and the bucket in seconds.
type metricsResponse struct {
	From          time.Time      `json:"from"`
	To            time.Time      `json:"to"`
	BucketSeconds float64        `json:"bucket_seconds"`
	Topics        []topicMetrics `json:"topics"`
}

// topicMetrics is one topic of metricsResponse.
type topicMetrics struct {
	Topic       string  `json:"topic"`
	Completed   int64   `json:"completed"`
	Failed      int64   `json:"failed"`
	FailureRate float64 `json:"failure_rate"`
	AvgMS       float64 `json:"avg_ms"`
	P50MS       float64 `json:"p50_ms"`
	P95MS       float64 `json:"p95_ms"`
	P99MS       float64 `json:"p99_ms"`
	Series      []point `json:"series"`
}

// point is one bucket of a topic's series.
type point struct {
	Start     time.Time `json:"start"`
	Completed int64     `json:"completed"`
	Failed    int64     `json:"failed"`
	P50MS     float64   `json:"p50_ms"`
	P95MS     float64   `json:"p95_ms"`
	P99MS     float64   `json:"p99_ms"`
}

// metrics serves GET api/metrics: per topic, throughput, failures and
// duration percentiles over a window, from the metrics store.
func (h *Handler) metrics(w http.ResponseWriter, r *http.Request) {
	q, err := newQuery(r, "topics", "window", "bucket")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	f := &sluice.MetricsFilter{Topics: q.list("topics")}
	if f.Window, err = q.duration("window", sluice.DefaultMetricsWindow); err != nil {
		h.fail(w, r, err)
		return
	}
	if f.Bucket, err = q.duration("bucket", 0); err != nil {
		h.fail(w, r, err)
		return
	}
	if !h.authorize(w, r, scoped(ActionRead, "metrics", f.Topics)) {
		return
	}
	m, err := h.c.Metrics(r.Context(), f)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	res := metricsResponse{From: m.From, To: m.To, BucketSeconds: m.Bucket.Seconds(), Topics: make([]topicMetrics, len(m.Topics))}
	for i, t := range m.Topics {
		tm := topicMetrics{Topic: t.Topic, Completed: t.Completed, Failed: t.Failed, FailureRate: t.FailureRate,
			AvgMS: ms(t.AvgDuration), P50MS: ms(t.P50), P95MS: ms(t.P95), P99MS: ms(t.P99), Series: make([]point, len(t.Series))}
		for j, b := range t.Series {
			tm.Series[j] = point{Start: b.Start, Completed: b.Completed, Failed: b.Failed, P50MS: ms(b.P50), P95MS: ms(b.P95), P99MS: ms(b.P99)}
		}
		res.Topics[i] = tm
	}
	writeJSON(w, http.StatusOK, res)
}
