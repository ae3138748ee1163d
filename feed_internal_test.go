package sluice

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestNoteOlderThanARead: a note made before the last read ended is passed
// over, whatever it says, when that read returned the job (or reported a
// resync): the read saw its commit or a later state, or the next read
// will. A later note, a delete whenever made, and a note of a job the read
// did not return are reported.
func TestNoteOlderThanARead(t *testing.T) {
	t.Parallel()
	p := &poller{mem: map[string]*seen{}, now: time.Now}
	job := func(s JobStatus) *JobState { return &JobState{ID: "j", Status: s} }
	before := time.Now()
	// A read saw the job's second cancel after its requeue was noted, or
	// while it was.
	p.lastWall = before.Add(time.Millisecond)
	p.lastEnd = p.lastWall.Add(time.Millisecond)
	p.mem["j"] = &seen{state: job(StatusCancelled), at: p.lastWall, readAt: p.lastWall}
	for _, sent := range []time.Time{before, p.lastWall.Add(time.Microsecond)} {
		require.Empty(t, p.applyNotes([]note{{state: job(StatusPending), sent: sent}}),
			"the requeue's note, older than the read, would report the job requeued again")
		require.Equal(t, StatusCancelled, p.mem["j"].state.Status)
	}

	later := p.lastEnd.Add(time.Millisecond)
	ch := p.applyNotes([]note{{state: job(StatusPending), sent: later}})
	require.Len(t, ch, 1)
	require.Equal(t, ChangeRequeued, ch[0].Kind)

	ch = p.applyNotes([]note{{state: job(StatusPending), deleted: true, sent: before}})
	require.Len(t, ch, 1)
	require.Equal(t, ChangeDeleted, ch[0].Kind)

	// A job the read did not return (its ID not of its time, say) is
	// reported by its note, however old; unless the read reported a
	// resync, which covers it.
	other := &JobState{ID: "k", Status: StatusPending}
	ch = p.applyNotes([]note{{state: other, sent: before}})
	require.Len(t, ch, 1)
	require.Equal(t, ChangeEnqueued, ch[0].Kind)
	p.resynced = true
	require.Empty(t, p.applyNotes([]note{{state: &JobState{ID: "l", Status: StatusPending}, sent: before}}))
}
