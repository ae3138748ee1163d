package completer_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/completer"
	"github.com/sluicehq/sluice/internal/testkit/exectest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestALoneOutcomeIsWrittenAtOnce(t *testing.T) {
	t.Parallel()
	exectest.Each(t, func(t *testing.T, db *exectest.DB) {
		b := newBench(t, db, 10, time.Minute)
		rows := b.claim(1)
		b.addAll(rows)
		b.requireCompleted(t, rows...) // before any Stop: nothing waits for company
		require.Equal(t, []int{1}, b.rec.sizes())
		stored := db.Get(rows[0].ID)
		require.Empty(t, stored.LockedBy)
		require.False(t, stored.FinalizedAt.IsZero())
	})
}

func TestOutcomesQueuedDuringAWriteGoInTheNextBatch(t *testing.T) {
	t.Parallel()
	exectest.Each(t, func(t *testing.T, db *exectest.DB) {
		b := newBench(t, db, 10, time.Minute)
		rows := b.claim(6)
		release := b.holdWrite(t, rows[0])
		b.addAll(rows[1:])
		release()
		b.requireCompleted(t, rows...)
		require.Equal(t, []int{1, 5}, b.rec.sizes())
	})
}

func TestABatchHoldsAtMostMaxBatch(t *testing.T) {
	t.Parallel()
	exectest.Each(t, func(t *testing.T, db *exectest.DB) {
		const queued = completer.MaxBatch + 2
		b := newBench(t, db, queued, time.Minute)
		rows := b.claim(1 + queued)
		release := b.holdWrite(t, rows[0])
		b.addAll(rows[1:])
		release()
		b.requireCompleted(t, rows...)
		require.Equal(t, []int{1, completer.MaxBatch, 2}, b.rec.sizes())
	})
}

func TestARejectedOutcomeIsSplitFromItsBatch(t *testing.T) {
	t.Parallel()
	exectest.Each(t, func(t *testing.T, db *exectest.DB) {
		b := newBench(t, db, 10, 300*time.Millisecond)
		rows := b.claim(5)
		bad := complete(rows[2])
		bad.Status = "bogus" // the table's CHECK constraint rejects it
		release := b.holdWrite(t, rows[0])
		b.addAll(rows[1:2])
		b.add(bad)
		b.addAll(rows[3:])
		release()
		b.requireCompleted(t, rows[0], rows[1], rows[3], rows[4])
		b.requireGivenUp(t, rows[2])
		require.Equal(t, []int{1, 4, 1, 1, 1, 1}, b.rec.sizes()[:6], "the batch, then each of its outcomes alone")
		require.GreaterOrEqual(t, len(b.rec.callsOf(rows[2].ID)), 3, "the rejected one is retried until its window passes")
		require.Len(t, b.rec.callsOf(rows[1].ID), 2, "the others are written once")
	})
}

func TestDoneIsToldWhetherTheClaimStillMatched(t *testing.T) {
	t.Parallel()
	exectest.Each(t, func(t *testing.T, db *exectest.DB) {
		b := newBench(t, db, 10, time.Minute)
		rows := b.claim(6)
		stale := map[string]func(f *driver.JobFinalize){
			"an earlier attempt":    func(f *driver.JobFinalize) { f.Attempt-- },
			"a later attempt":       func(f *driver.JobFinalize) { f.Attempt++ },
			"another holder":        func(f *driver.JobFinalize) { f.LockedBy = "someone else" },
			"another claim's time":  func(f *driver.JobFinalize) { f.AttemptedAt = f.AttemptedAt.Add(-time.Second) },
			"a job that is not one": func(f *driver.JobFinalize) { f.ID = uuid.Must(uuid.NewV7()).String() },
		}
		release := b.holdWrite(t, rows[0])
		fins := map[string]*driver.JobFinalize{}
		i := 1
		for name, spoil := range stale {
			fin := complete(rows[i])
			spoil(fin)
			fins[name] = fin
			b.add(fin)
			i++
		}
		release()
		b.requireCompleted(t, rows[0])
		for name, fin := range fins {
			o := b.wait(t, fin.ID)
			require.NoError(t, o.err, name)
			require.False(t, o.matched, name)
		}
		for _, row := range rows[1:] {
			stored := db.Get(row.ID)
			require.Equal(t, driver.StatusProcessing, stored.Status)
			require.Equal(t, row.LockedBy, stored.LockedBy)
		}

	})
}

func TestAFinishedJobMatchesNoMore(t *testing.T) {
	t.Parallel()
	exectest.Each(t, func(t *testing.T, db *exectest.DB) {
		first := newBench(t, db, 10, time.Minute)
		rows := first.claim(1)
		first.addAll(rows)
		first.requireCompleted(t, rows...)

		again := newBench(t, db, 10, time.Minute)
		again.addAll(rows)
		o := again.wait(t, rows[0].ID)
		require.NoError(t, o.err)
		require.False(t, o.matched)
	})
}

func TestAFailedWriteIsRetriedWithAGrowingPause(t *testing.T) {
	t.Parallel()
	exectest.Each(t, func(t *testing.T, db *exectest.DB) {
		b := newBench(t, db, 10, time.Minute)
		rows := b.claim(1)
		restore := db.RefuseUpdates()
		b.addAll(rows)
		const retries = 5
		require.Eventually(t, func() bool { return len(b.rec.callsOf(rows[0].ID)) > retries }, 20*time.Second, time.Millisecond)
		calls := b.rec.callsOf(rows[0].ID)
		// The pause starts at 10 ms and doubles: retry k comes at least
		// 10 ms × (2^k − 1) after the first try.
		for k := 1; k <= retries; k++ {
			least := 10 * time.Millisecond * time.Duration(1<<k-1)
			require.GreaterOrEqual(t, calls[k].at.Sub(calls[0].at), least, "retry %d", k)
		}
		_, told := b.told(rows[0].ID)
		require.False(t, told, "not given up within its window")
		require.Positive(t, b.logs.Count("level=WARN", "finalizing a job failed; will retry", "job_id="+rows[0].ID))

		restore()
		b.requireCompleted(t, rows...)
	})
}

func TestAnOutcomeIsGivenUpOnceItsWindowPasses(t *testing.T) {
	t.Parallel()
	exectest.Each(t, func(t *testing.T, db *exectest.DB) {
		const window = 150 * time.Millisecond
		b := newBench(t, db, 10, window)
		rows := b.claim(1)
		db.RefuseUpdates()
		added := time.Now()
		b.addAll(rows)
		o := b.requireGivenUp(t, rows[0])
		require.ErrorContains(t, o.err, "updates refused")
		require.GreaterOrEqual(t, o.at.Sub(added), window)
		require.Equal(t, 1, b.logs.Count("level=ERROR", "giving up finalizing a job", "job_id="+rows[0].ID))

		tries := len(b.rec.callsOf(rows[0].ID))
		time.Sleep(50 * time.Millisecond)
		require.Len(t, b.rec.callsOf(rows[0].ID), tries, "no try after giving up")
	})
}

func TestGiveUpEndsRetriesAtOnce(t *testing.T) {
	t.Parallel()
	exectest.Each(t, func(t *testing.T, db *exectest.DB) {
		b := newBench(t, db, 10, time.Hour)
		rows := b.claim(3)
		restore := db.RefuseUpdates()
		b.addAll(rows[:1])
		// After the first try and six retries, the pause before the next
		// is 640 ms.
		require.Eventually(t, func() bool {
			calls := b.rec.callsOf(rows[0].ID)
			return len(calls) >= 7 && !calls[6].end.IsZero()
		}, 20*time.Second, time.Millisecond)
		time.Sleep(20 * time.Millisecond) // so that the completer waits for the next retry
		b.c.GiveUp()
		o := b.requireGivenUp(t, rows[0])
		require.ErrorContains(t, o.err, "updates refused")
		last := b.rec.callsOf(rows[0].ID)[6].at
		require.Less(t, o.at.Sub(last), 600*time.Millisecond, "given up without waiting for the next retry")

		// Giving up ends retries, not first tries.
		b.addAll(rows[1:2])
		b.requireGivenUp(t, rows[1])
		restore()
		b.addAll(rows[2:])
		b.requireCompleted(t, rows[2])
	})
}

func TestStopGivesUpWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	exectest.Each(t, func(t *testing.T, db *exectest.DB) {
		b := newBench(t, db, 10, time.Hour)
		rows := b.claim(1)
		db.RefuseUpdates()
		b.addAll(rows)
		require.Eventually(t, func() bool { return len(b.rec.callsOf(rows[0].ID)) >= 2 }, 10*time.Second, time.Millisecond)
		b.stop(t, 50*time.Millisecond)
		_, told := b.told(rows[0].ID)
		require.True(t, told, "Done is called before Stop returns")
		o := b.requireGivenUp(t, rows[0])
		require.ErrorContains(t, o.err, "updates refused")
	})
}

func TestStopWritesWhatIsQueued(t *testing.T) {
	t.Parallel()
	exectest.Each(t, func(t *testing.T, db *exectest.DB) {
		b := newBench(t, db, 20, time.Minute)
		rows := b.claim(11)
		release := b.holdWrite(t, rows[0])
		b.addAll(rows[1:])
		b.c.GiveUp() // giving up ends retries, not first tries
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			b.stop(t, 10*time.Second)
		}()
		release()
		<-stopped
		for _, row := range rows {
			_, told := b.told(row.ID)
			require.True(t, told, "Done is called before Stop returns")
		}
		b.requireCompleted(t, rows...)
	})
}

func TestRetriesNeverHoldBackNewOutcomes(t *testing.T) {
	t.Parallel()
	exectest.Each(t, func(t *testing.T, db *exectest.DB) {
		b := newBench(t, db, 2, time.Hour)
		rows := b.claim(11)
		restore := db.RefuseUpdates(rows[0].ID)
		b.addAll(rows[:1])
		require.Eventually(t, func() bool { return len(b.rec.callsOf(rows[0].ID)) >= 3 }, 10*time.Second, time.Millisecond)
		// The queue holds two: were the retries in the way, Add would
		// block.
		for _, row := range rows[1:] {
			b.addAll([]*driver.JobRow{row})
			b.requireCompleted(t, row)
		}
		_, told := b.told(rows[0].ID)
		require.False(t, told)

		restore()
		b.requireCompleted(t, rows[0])
	})
}
