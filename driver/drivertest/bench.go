package drivertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

// BenchmarkClaimFlowCost measures, for a driver's benchmark, what flow
// control costs a claim of ten jobs of topic in queue "default": claims
// with Flow (as a client makes them for a queue it has seen a stored state
// for; this one gets a state without limits) and without alternate, one
// of each per iteration, on one backlog, so that both meet the same load.
// fill adds pending jobs of topic to the queue, due at now(). It reports
// flow_ns and bare_ns, their mean times, and flow/bare, their ratio.
func BenchmarkClaimFlowCost(b *testing.B, ex driver.Executor, topic string, now func() time.Time, fill func()) {
	ctx := b.Context()
	_, err := ex.QueueStateSet(ctx, &driver.QueueStateSetParams{Queue: "default", Now: now()})
	require.NoError(b, err)
	fill()
	var spent [2]time.Duration
	claims := 0
	for b.Loop() {
		for k, flow := range []bool{true, false} {
			at, start := now(), time.Now()
			rows, err := ex.JobClaim(ctx, &driver.JobClaimParams{
				ClientID: "bench", Queue: "default", Topics: []string{topic},
				Limit: 10, Now: at, LockedUntil: at.Add(time.Minute), Flow: flow,
			})
			spent[k] += time.Since(start)
			require.NoError(b, err)
			b.StopTimer()
			if len(rows) < 10 {
				fill()
			}
			items := make([]*driver.JobFinalize, len(rows))
			for i, r := range rows {
				items[i] = &driver.JobFinalize{ID: r.ID, Attempt: r.Attempt, LockedBy: r.LockedBy, AttemptedAt: r.AttemptedAt,
					Status: driver.StatusCompleted, FinalizedAt: at}
			}
			_, err = ex.JobFinalize(ctx, &driver.JobFinalizeParams{Jobs: items})
			require.NoError(b, err)
			b.StartTimer()
		}
		claims++
	}
	b.ReportMetric(float64(spent[0].Nanoseconds())/float64(claims), "flow_ns")
	b.ReportMetric(float64(spent[1].Nanoseconds())/float64(claims), "bare_ns")
	b.ReportMetric(float64(spent[0])/float64(spent[1]), "flow/bare")
}
