package driver_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func TestJobRowHistory(t *testing.T) {
	t.Parallel()
	at := func(min int) time.Time { return time.Date(2026, 1, 8, 12, min, 0, 0, time.UTC) }
	failed := driver.AttemptError{Attempt: 1, At: at(1), Error: "boom", Trace: "stack", StartedAt: at(0), ClientID: "a"}
	lost := driver.AttemptError{Attempt: 2, At: at(9), Error: "lease expired", StartedAt: at(2), ClientID: "b"}
	requeued := driver.AttemptError{Attempt: 2, At: at(10), Error: driver.RequeuedError}
	failedRec := driver.AttemptRecord{Attempt: 1, StartedAt: at(0), ClientID: "a", EndedAt: at(1), Error: "boom", Trace: "stack"}
	lostRec := driver.AttemptRecord{Attempt: 2, StartedAt: at(2), ClientID: "b", EndedAt: at(9), Error: "lease expired"}
	tests := map[string]struct {
		row  driver.JobRow
		want []driver.AttemptRecord
	}{
		"never run": {driver.JobRow{Status: driver.StatusPending}, []driver.AttemptRecord{}},
		"running": {
			driver.JobRow{Status: driver.StatusProcessing, Attempt: 1, AttemptedAt: at(0), AttemptedBy: "a", LockedBy: "a"},
			[]driver.AttemptRecord{{Attempt: 1, StartedAt: at(0), ClientID: "a"}},
		},
		"running, claimed by a client that did not set AttemptedBy": {
			driver.JobRow{Status: driver.StatusProcessing, Attempt: 2, AttemptedAt: at(0), AttemptedBy: "old", LockedBy: "a"},
			[]driver.AttemptRecord{{Attempt: 2, StartedAt: at(0), ClientID: "a"}},
		},
		"completed after failures": {
			driver.JobRow{Status: driver.StatusCompleted, Attempt: 3, AttemptedAt: at(11), AttemptedBy: "c",
				FinalizedAt: at(12), Errors: []driver.AttemptError{failed, lost}},
			[]driver.AttemptRecord{failedRec, lostRec, {Attempt: 3, StartedAt: at(11), ClientID: "c", EndedAt: at(12)}},
		},
		"failed for good, then requeued": {
			driver.JobRow{Status: driver.StatusPending, Attempt: 2, AttemptedAt: at(2), AttemptedBy: "b",
				Errors: []driver.AttemptError{failed, lost, requeued}},
			[]driver.AttemptRecord{failedRec, lostRec},
		},
		"waiting for a retry": {
			driver.JobRow{Status: driver.StatusPending, Attempt: 1, AttemptedAt: at(0), AttemptedBy: "a",
				Errors: []driver.AttemptError{failed}},
			[]driver.AttemptRecord{failedRec},
		},
		"snoozed": {
			driver.JobRow{Status: driver.StatusPending, Attempt: 2, AttemptedAt: at(2), AttemptedBy: "b",
				Errors: []driver.AttemptError{failed}},
			[]driver.AttemptRecord{failedRec},
		},
		"cancelled while running": {
			driver.JobRow{Status: driver.StatusCancelled, Attempt: 1, AttemptedAt: at(0), AttemptedBy: "a", FinalizedAt: at(1)},
			[]driver.AttemptRecord{},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tt.row.History())
		})
	}
}
