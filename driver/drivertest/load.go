package drivertest

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func queueLoadCases[TTx any]() []testCase[TTx] {
	return []testCase[TTx]{
		// The processing jobs of the queue are counted by holder; the due
		// pending jobs of the queue (and of the given topics) that a claim
		// takes before the place are counted as ahead, at most AheadLimit
		// of them.
		{name: "Counts", twin: true, fn: testQueueLoadCounts[TTx]},
		// A queue with nothing running or waiting has an empty Running.
		{name: "Empty", twin: true, fn: testQueueLoadEmpty[TTx]},
	}
}

// queueLoadMode reads the load of p through mode m.
func queueLoadMode[TTx any](h *harness[TTx], m mode, p *driver.QueueLoadParams) *driver.QueueLoad {
	h.t.Helper()
	before := *p
	var load *driver.QueueLoad
	h.via(m, func(ex driver.Executor) {
		var err error
		load, err = ex.QueueLoad(h.ctx, p)
		require.NoError(h.t, err, "QueueLoad")
	})
	require.Equal(h.t, before, *p, "QueueLoad modified its params")
	require.NotNil(h.t, load, "QueueLoad")
	require.NotNil(h.t, load.Running, "QueueLoad's Running")
	return load
}

func testQueueLoadCounts[TTx any](h *harness[TTx], m mode) {
	// Running: three jobs of client1, one of client2; and neither a job of
	// another queue nor a finished one.
	for _, client := range []string{client1, client1, client1, client2} {
		h.started(client, nil)
	}
	elsewhere := h.newJob()
	elsewhere.Queue = "other"
	h.started(client1, elsewhere)
	done := h.started(client2, nil)
	h.finalize(ending(done, driver.StatusCompleted, h.at(time.Second)))

	// Pending, in claim order around the place (priority 1, due at base,
	// ID ids[3]): three due before it, then jobs that do not count.
	ids := sortedIDs(7)
	pending := func(id string, priority int, runAt time.Time, queue string) *driver.JobInsert {
		j := h.newJob()
		j.ID, j.Priority, j.RunAt, j.Queue = id, priority, runAt, queue
		return j
	}
	jobs := []*driver.JobInsert{
		pending(ids[5], 0, h.at(-time.Minute), "default"), // smaller priority
		pending(ids[4], 1, h.at(-time.Second), "default"), // earlier
		pending(ids[0], 1, h.base, "default"),             // smaller ID
		pending(ids[3], 1, h.base, "default"),             // the place itself
		pending(ids[1], 0, h.at(time.Hour), "default"),    // before it, but not due
		pending(ids[2], 0, h.at(-time.Minute), "other"),   // another queue
		pending(ids[6], 1, h.base, "default"),             // after it: larger ID
		pending(newID(), 2, h.at(-time.Hour), "default"),  // after it: larger priority
	}
	h.insert(jobs...)
	p := &driver.QueueLoadParams{Queue: "default", Now: h.base, Priority: 1, RunAt: h.base, ID: ids[3], AheadLimit: 100}
	load := queueLoadMode(h, m, p)
	require.Equal(h.t, map[string]int{client1: 3, client2: 1}, load.Running, "running jobs by holder")
	require.Equal(h.t, 3, load.Ahead, "due jobs ahead")

	p.AheadLimit = 2
	require.Equal(h.t, 2, queueLoadMode(h, m, p).Ahead, "due jobs ahead, at most AheadLimit")

	// Of some topics only: those of the first two, and one no job has.
	p.AheadLimit, p.Topics = 100, []string{jobs[0].Topic, jobs[1].Topic, "topic_none"}
	require.Equal(h.t, 2, queueLoadMode(h, m, p).Ahead, "due jobs of the topics ahead")
}

func testQueueLoadEmpty[TTx any](h *harness[TTx], m mode) {
	h.started(client1, nil) // in queue default
	load := queueLoadMode(h, m, &driver.QueueLoadParams{
		Queue: "idle", Now: h.base, Priority: 0, RunAt: h.base, ID: newID(), AheadLimit: 10,
	})
	require.Empty(h.t, load.Running)
	require.Zero(h.t, load.Ahead)
}
