package sluiceweb_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

// TestMetrics reads the metrics store a working client wrote: per topic,
// the attempts, their failure rate and duration percentiles, in all and
// per bucket.
func TestMetrics(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		for range 3 {
			e.do("POST", "api/jobs", `{"topic": "mail", "payload": {"to": "a@example.com"}}`).json(t, http.StatusCreated, &struct{}{})
		}
		worker := db.client(t, &sluice.Config{Workers: mailWorkers(func(context.Context, *sluice.Job[mailArgs]) error { return nil })})
		require.NoError(t, worker.Start(t.Context()))
		require.Eventually(t, func() bool {
			var st struct {
				ByStatus map[string]int `json:"by_status"`
			}
			e.do("GET", "api/jobs/stats", "").json(t, http.StatusOK, &st)
			return st.ByStatus["completed"] == 3
		}, 10*time.Second, 10*time.Millisecond)
		require.NoError(t, worker.Stop(t.Context()))

		var m struct {
			BucketSeconds float64 `json:"bucket_seconds"`
			Topics        []struct {
				Topic       string  `json:"topic"`
				Completed   int     `json:"completed"`
				Failed      int     `json:"failed"`
				FailureRate float64 `json:"failure_rate"`
				Series      []struct {
					Completed int `json:"completed"`
				} `json:"series"`
			} `json:"topics"`
		}
		e.do("GET", "api/metrics?window=30m&bucket=10m&topics=mail", "").json(t, http.StatusOK, &m)
		require.Equal(t, 600.0, m.BucketSeconds)
		require.Len(t, m.Topics, 1)
		require.Equal(t, "mail", m.Topics[0].Topic)
		require.Equal(t, 3, m.Topics[0].Completed)
		require.Zero(t, m.Topics[0].FailureRate)
		sum := 0
		for _, b := range m.Topics[0].Series {
			sum += b.Completed
		}
		require.Equal(t, 3, sum)
		e.do("GET", "api/metrics?window=90s", "").problem(t, http.StatusBadRequest, "invalid_filter")
		e.do("GET", "api/metrics?bucket=1s", "").problem(t, http.StatusBadRequest, "invalid_filter")
	})
}
