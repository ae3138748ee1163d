package faults_test

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/faults/faultjob"
)

// Scenario 9: three worker processes run the same two schedules, firing
// every second (a periodic job in their Config that catches up once, and a
// stored schedule that skips missed ticks), while one of them is killed
// with SIGKILL and restarted about twice a second; then all are killed at
// once and kept down for a few seconds. From the database afterwards:
// every tick made exactly one job, but for the ticks of the downtime, of
// which the periodic job enqueued at most one and the stored schedule none.
func TestSchedulesUnderKill9(t *testing.T) {
	for _, d := range bothDrivers {
		t.Run(d.name, func(t *testing.T) {
			tg := d.new(t)
			procs := startWorkers(t, tg, 3, "-workers", "4", "-work", "5ms", "-lease", "2s", "-tick", "1s")
			faults := repeat(span(3*time.Second, 45*time.Second), func() time.Duration { return jitter(300, 700) },
				func() { killAndRestart(procs) })
			down := time.Now()
			for _, p := range procs {
				p.kill9()
			}
			time.Sleep(span(2500*time.Millisecond, 10*time.Second))
			up := time.Now()
			procs[0].restart()
			ready := time.Now()
			for _, p := range procs[1:] {
				p.restart()
			}
			time.Sleep(span(1500*time.Millisecond, 10*time.Second))
			stopAll(procs)
			gap := downtime{from: down, to: up, lookedBy: ready.Add(1500 * time.Millisecond)}
			for _, s := range []struct {
				prefix string
				once   bool
			}{{"periodic:" + faultjob.PeriodicName + ":", true}, {"schedule:" + faultjob.StoredName + ":", false}} {
				tg.checkTicks(t, s.prefix, s.once, gap)
			}
			// The jobs enqueued are worked by a process that schedules
			// nothing, once the stored schedule is gone.
			_, err := tg.db.ExecContext(t.Context(), `DELETE FROM sluice_jobs_schedules`)
			require.NoError(t, err)
			finish(t, "schedules", tg, []*proc{tg.start(t, "-workers", "4", "-work", "5ms")}, append(faults, up))
		})
	}
}

// downtime is when no process ran: from from to to, and by lookedBy a
// restarted process had surely looked at the schedules.
type downtime struct {
	from, to, lookedBy time.Time
}

// checkTicks reads the jobs whose unique keys start with prefix (a
// schedule's, followed by its tick) and checks that every tick from the
// first to the last has exactly one job, but for ticks of the downtime:
// the first tick after a kill may be missed, and of those due while no
// process ran, a schedule that catches up once (once) enqueues at most
// one, and one that skips none.
func (tg *target) checkTicks(t *testing.T, prefix string, once bool, gap downtime) {
	t.Helper()
	rows, err := tg.db.QueryContext(t.Context(),
		`SELECT unique_key, count(*) FROM sluice_jobs WHERE unique_key LIKE '`+prefix+`%' GROUP BY unique_key`)
	require.NoError(t, err)
	defer rows.Close()
	jobs := map[time.Time]int{}
	var ticks []time.Time
	for rows.Next() {
		var key string
		var n int
		require.NoError(t, rows.Scan(&key, &n))
		tick, err := time.Parse(time.RFC3339, strings.TrimPrefix(key, prefix))
		require.NoError(t, err, key)
		jobs[tick] = n
		ticks = append(ticks, tick)
	}
	require.NoError(t, rows.Err())
	require.NotEmpty(t, ticks, "no job of %s", prefix)
	sort.Slice(ticks, func(i, j int) bool { return ticks[i].Before(ticks[j]) })
	var dups, gaps, skipped, whileDown int
	for tick := ticks[0]; !tick.After(ticks[len(ticks)-1]); tick = tick.Add(time.Second) {
		n := jobs[tick]
		dups += max(n-1, 0)
		inGap := tick.After(gap.from.Add(-time.Second)) && !tick.After(gap.lookedBy)
		switch {
		case n == 0 && inGap:
			skipped++
		case n == 0:
			gaps++
			t.Logf("%s: no job for tick %s", prefix, tick.Format(time.RFC3339))
		case tick.After(gap.from.Add(200*time.Millisecond)) && !tick.After(gap.to):
			whileDown++ // due while no process ran
		}
	}
	policy := "skip"
	if once {
		policy = "once"
	}
	summary(t, "FAULT_SCHEDULE driver=%s schedule=%s catch_up=%s ticks=%d duplicates=%d gaps=%d skipped_in_downtime=%d enqueued_while_down=%d",
		tg.driver, strings.TrimSuffix(prefix, ":"), policy, int(ticks[len(ticks)-1].Sub(ticks[0])/time.Second)+1,
		dups, gaps, skipped, whileDown)
	require.Zero(t, dups, "%s: ticks with more than one job", prefix)
	require.Zero(t, gaps, "%s: ticks without a job outside the downtime", prefix)
	require.Positive(t, skipped, "%s: the downtime missed no tick", prefix)
	if once {
		require.LessOrEqual(t, whileDown, 1, "%s: a burst of missed ticks", prefix)
	} else {
		require.Zero(t, whileDown, "%s: a missed tick enqueued", prefix)
	}
}
