package drivertest

import (
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

// Bounds on waiting for a notification. Notifications may be lost, so the
// suite inserts again after each wait, up to notifyTries times; a driver that
// delivers at once passes without waiting.
const (
	notifyWait  = time.Second
	notifyTries = 15
)

func notifierCases[TTx any]() []testCase[TTx] {
	return []testCase[TTx]{
		// A listener hears the queue of jobs inserted through the driver's
		// own executor, and nothing once stopped. Drivers that do not
		// implement driver.Notifier pass.
		{name: "Listen", fn: testNotifierListen[TTx]},
	}
}

// awaitNotification inserts a job into queue and waits for a notification
// of that queue on ch, inserting again each time a wait runs out.
func awaitNotification[TTx any](h *harness[TTx], ch <-chan driver.Notification, queue string) {
	h.t.Helper()
	for range notifyTries {
		j := h.newJob()
		j.Queue = queue
		h.insert(j)
		timer := time.NewTimer(notifyWait)
	wait:
		for {
			select {
			case n := <-ch:
				if n.Queue == queue {
					timer.Stop()
					return
				}
			case <-timer.C:
				break wait
			}
		}
	}
	h.t.Fatalf("no notification for queue %q after %d inserts", queue, notifyTries)
}

// listen starts a listener that passes notifications to a buffered channel,
// dropping them when it is full, and counts in late the notifications of
// queue lateQueue.
func listen[TTx any](h *harness[TTx], n driver.Notifier, lateQueue string, late *atomic.Int64) (<-chan driver.Notification, func()) {
	h.t.Helper()
	ch := make(chan driver.Notification, 64)
	stop, err := n.Listen(h.ctx, func(n driver.Notification) {
		if n.Queue == lateQueue {
			late.Add(1)
		}
		select {
		case ch <- n:
		default:
		}
	})
	require.NoError(h.t, err, "Listen")
	require.NotNil(h.t, stop, "Listen returned no stop function")
	return ch, stop
}

func testNotifierListen[TTx any](h *harness[TTx], _ mode) {
	n, ok := any(h.s.Driver).(driver.Notifier)
	if !ok {
		h.t.Log("the driver does not implement driver.Notifier; nothing to check")
		return
	}
	const before, after = "notify_before", "notify_after"
	var late, witnessed atomic.Int64

	ch, stop := listen(h, n, after, &late)
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	awaitNotification(h, ch, before)
	stop()
	stopped = true

	// After stop, jobs of queue after must not reach the first listener. A
	// second listener witnesses that such notifications were sent.
	witness, stopWitness := listen(h, n, after, &witnessed)
	defer stopWitness()
	awaitNotification(h, witness, after)
	require.Zero(h.t, late.Load(), "notifications delivered after stop")
}
