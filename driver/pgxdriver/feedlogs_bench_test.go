package pgxdriver_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/testkit/clientbench"
)

// BenchmarkFeedRunningLogs measures a change feed's read of 200 running
// jobs, each with no logs or with 100 records of about 250 bytes kept.
func BenchmarkFeedRunningLogs(b *testing.B) {
	for _, records := range []int{0, 100} {
		b.Run(map[int]string{0: "NoLogs", 100: "Logs100"}[records], func(b *testing.B) {
			d, _ := benchDriver(b)
			clientbench.FeedRunningLogs(b, d, clientbench.Size(200), records)
		})
	}
}
