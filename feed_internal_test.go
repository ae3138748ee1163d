package sluice

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestNoteOlderThanARead: a note made before the last read began is passed
// over, whatever it says: the read saw its commit or a later state. A
// later note, and a delete whenever made, are reported.
func TestNoteOlderThanARead(t *testing.T) {
	t.Parallel()
	p := &poller{mem: map[string]*seen{}, now: time.Now}
	job := func(s JobStatus) *JobState { return &JobState{ID: "j", Status: s} }
	before := time.Now()
	// A read saw the job's second cancel after its requeue was noted.
	p.lastWall = before.Add(time.Millisecond)
	p.mem["j"] = &seen{state: job(StatusCancelled), at: p.lastWall}

	require.Empty(t, p.applyNotes([]note{{state: job(StatusPending), sent: before}}),
		"the requeue's note, older than the read, would report the job requeued again")
	require.Equal(t, StatusCancelled, p.mem["j"].state.Status)

	later := p.lastWall.Add(time.Millisecond)
	ch := p.applyNotes([]note{{state: job(StatusPending), sent: later}})
	require.Len(t, ch, 1)
	require.Equal(t, ChangeRequeued, ch[0].Kind)

	ch = p.applyNotes([]note{{state: job(StatusPending), deleted: true, sent: before}})
	require.Len(t, ch, 1)
	require.Equal(t, ChangeDeleted, ch[0].Kind)
}
