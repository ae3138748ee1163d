package faults_test

import (
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/faults/faultjob"
)

// flowMaxRunning is the concurrency limit of the flow control scenario.
const flowMaxRunning = 3

// Scenario 10: flow control under SIGKILL. Three worker processes of four
// workers each work a queue limited to three jobs running at once, across
// processes, while one of them is killed and restarted about once a
// second; the queue is paused for two seconds in the middle; chains of
// three jobs, each waiting for the one before, run among the load. From
// the database afterwards, besides the usual invariants: no two effects
// of more than three jobs overlapped in time, no job started while the
// queue was paused (once the workers could have seen it), and every job of
// a chain started after the one before it took effect.
func TestFlowControlUnderKill9(t *testing.T) {
	for _, d := range bothDrivers {
		t.Run(d.name, func(t *testing.T) {
			tg := d.new(t)
			ctx := t.Context()
			_, err := tg.client.SetQueueLimits(ctx, sluice.QueueDefault, sluice.QueueLimits{MaxRunning: flowMaxRunning})
			require.NoError(t, err)
			chains := enqueueChains(t, tg, 20)
			procs := startWorkers(t, tg, 3, "-workers", "4", "-work", "20ms", "-lease", "2s")
			run := span(8*time.Second, 60*time.Second)
			wait := tg.produceBackground(t, run, 5, 100*time.Millisecond)

			paused := make(chan [2]time.Time, 1)
			go func() {
				time.Sleep(run / 3)
				_, err := tg.client.PauseQueue(ctx, sluice.QueueDefault)
				from := time.Now()
				if err != nil {
					t.Error(err)
				}
				time.Sleep(2 * time.Second)
				to := time.Now()
				if _, err := tg.client.ResumeQueue(ctx, sluice.QueueDefault); err != nil {
					t.Error(err)
				}
				paused <- [2]time.Time{from, to}
			}()
			faults := repeat(run, func() time.Duration { return jitter(700, 1300) }, func() { killAndRestart(procs) })
			wait()
			pause := <-paused
			tg.drain(t, 2*time.Minute)
			stopAll(procs)

			effects := tg.effects(t)
			most := mostAtOnce(effects)
			// The workers read the queue states once a poll interval (200
			// ms); a job they claimed before may start a moment after.
			const grace = 500 * time.Millisecond
			var duringPause, outOfOrder int
			for _, e := range effects {
				if e.start >= pause[0].Add(grace).UnixMicro() && e.start < pause[1].UnixMicro() {
					duringPause++
				}
			}
			for _, c := range chains {
				for i := 1; i < len(c); i++ {
					before, after := effects[c[i-1]], effects[c[i]]
					if before == nil || after == nil || after.start < before.done {
						outOfOrder++
					}
				}
			}
			summary(t, "FAULT_FLOW driver=%s max_running=%d most_at_once=%d started_while_paused=%d chains=%d out_of_order=%d",
				tg.driver, flowMaxRunning, most, duringPause, len(chains), outOfOrder)
			require.LessOrEqual(t, most, flowMaxRunning, "jobs running at once across processes")
			require.Zero(t, duringPause, "jobs started while the queue was paused")
			require.Zero(t, outOfOrder, "chained jobs that started before the job they wait for took effect")
			report(t, "flow_control", tg, tg.check(t, append(faults, pause[1])))
		})
	}
}

// enqueueChains enqueues n chains of three jobs, each waiting for the one
// before, and returns their IDs in order.
func enqueueChains(t *testing.T, tg *target, n int) [][]string {
	t.Helper()
	chains := make([][]string, n)
	for i := range chains {
		var prev []string
		for step := range 3 {
			res, err := tg.client.Enqueue(t.Context(), faultjob.Args{N: -100 - 3*i - step},
				&sluice.EnqueueOptions{MaxRetries: faultjob.MaxRetries, DependsOn: prev})
			require.NoError(t, err)
			tg.commit(res.Job.ID)
			chains[i] = append(chains[i], res.Job.ID)
			prev = []string{res.Job.ID}
		}
	}
	return chains
}

// effect is when a job's worker began it and wrote its effect, in Unix
// microseconds.
type effect struct{ start, done int64 }

// effects reads every job's effect (the first, should there be more:
// check counts those).
func (tg *target) effects(t *testing.T) map[string]*effect {
	t.Helper()
	effects, _, _ := tg.effectsCounted(t)
	return effects
}

// effectsCounted reads every job's effect (the first, should there be
// more), how many each job has, and when each was done.
func (tg *target) effectsCounted(t *testing.T) (effects map[string]*effect, counts map[string]int, done []int64) {
	t.Helper()
	rows, err := tg.db.QueryContext(t.Context(), `SELECT job_id, started_at, done_at FROM fault_effects`)
	require.NoError(t, err)
	defer rows.Close()
	effects, counts = map[string]*effect{}, map[string]int{}
	for rows.Next() {
		var (
			id string
			e  effect
		)
		require.NoError(t, rows.Scan(&id, &e.start, &e.done))
		if counts[id]++; counts[id] == 1 {
			effects[id] = &e
		}
		done = append(done, e.done)
	}
	require.NoError(t, rows.Err())
	return effects, counts, done
}

// mostAtOnce returns the most effects whose spans, from start to done,
// overlap at one instant.
func mostAtOnce(effects map[string]*effect) int {
	type edge struct {
		at    int64
		delta int
	}
	edges := make([]edge, 0, 2*len(effects))
	for _, e := range effects {
		edges = append(edges, edge{e.start, 1}, edge{e.done, -1})
	}
	// Ends before starts at one instant: touching spans do not overlap.
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at != edges[j].at {
			return edges[i].at < edges[j].at
		}
		return edges[i].delta < edges[j].delta
	})
	n, most := 0, 0
	for _, e := range edges {
		n += e.delta
		most = max(most, n)
	}
	return most
}
