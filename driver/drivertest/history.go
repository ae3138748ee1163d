package drivertest

import (
	"time"

	"github.com/sluicehq/sluice/driver"
)

func historyCases[TTx any]() []testCase[TTx] {
	return []testCase[TTx]{
		// Each attempt's error keeps when the attempt started and which
		// client ran it, across retries, in UTC at microsecond precision.
		{name: "Attempts", twin: true, fn: testHistoryAttempts[TTx]},
	}
}

func testHistoryAttempts[TTx any](h *harness[TTx], m mode) {
	row := h.started(client1, nil)
	want := cloneRow(row)
	for attempt, client := range []string{client1, client2} {
		if attempt > 0 {
			row = h.claimJob(row, client, h.at(time.Duration(attempt)*time.Minute), h.at(time.Hour))
		}
		e := &driver.AttemptError{
			Attempt: row.Attempt, At: h.at(time.Duration(attempt)*time.Minute + time.Second),
			Error: "boom", StartedAt: row.AttemptedAt.In(time.FixedZone("X", 3600)), ClientID: client,
		}
		h.via(m, func(ex driver.Executor) {
			h.finalizeVia(ex, retrying(row, h.at(time.Duration(attempt+1)*time.Minute), e))
		})
		want.Errors = append(want.Errors, *e)
		row = h.get(row.ID)
	}
	want.Attempt = 2
	want.Status = driver.StatusPending
	want.RunAt = h.at(2 * time.Minute)
	want.AttemptedAt = h.at(time.Minute)
	want.AttemptedBy = client2
	want.LockedBy, want.LockedUntil = "", time.Time{}
	h.requireStored(want)
}
