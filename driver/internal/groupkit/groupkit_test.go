package groupkit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/groupkit"
)

func job(id string) *driver.JobInsert {
	return &driver.JobInsert{ID: id, Topic: "t", Queue: "default", Payload: []byte(`{"a":1}`),
		Metadata: []byte(`{"m":"x"}`), Tags: []string{"x"}}
}

func TestPrepareChecksTheGroupAndSetsItsJobs(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 6789, time.FixedZone("x", 3600))
	p := &driver.GroupInsertParams{
		Group: driver.GroupRow{ID: "g", Kind: driver.GroupWorkflow, Name: "w", CreatedAt: created,
			Counts: map[driver.JobStatus]int{driver.StatusPending: 1}},
		Jobs: []*driver.JobInsert{job("a"), job("b")},
	}
	p.Jobs[1].Task, p.Jobs[1].DependsOn, p.Jobs[1].OnDependencyFailure = "b", []string{"a"}, driver.DependencyRun
	g, jobs, err := groupkit.Prepare(p)
	require.NoError(t, err)
	require.Equal(t, created.UTC().Truncate(time.Microsecond), g.CreatedAt)
	require.Nil(t, g.Counts)
	for _, j := range jobs {
		require.Equal(t, "g", j.GroupID)
	}

	bad := func(change func(p *driver.GroupInsertParams)) error {
		p := &driver.GroupInsertParams{Group: driver.GroupRow{ID: "g", Kind: driver.GroupBatch, Name: "b"},
			Jobs: []*driver.JobInsert{job("a")}}
		change(p)
		_, _, err := groupkit.Prepare(p)
		return err
	}
	for name, change := range map[string]func(p *driver.GroupInsertParams){
		"kind":     func(p *driver.GroupInsertParams) { p.Group.Kind = "dag" },
		"name":     func(p *driver.GroupInsertParams) { p.Group.Name = "bad\xff" },
		"too many": func(p *driver.GroupInsertParams) { p.Jobs = make([]*driver.JobInsert, driver.MaxGroupJobs+1) },
		"nil job":  func(p *driver.GroupInsertParams) { p.Jobs = append(p.Jobs, nil) },
		"unique":   func(p *driver.GroupInsertParams) { p.Jobs[0].UniqueKey = "u" },
		"policy":   func(p *driver.GroupInsertParams) { p.Jobs[0].DependsOn = []string{"x"} },
		"sequence": func(p *driver.GroupInsertParams) { p.Jobs[0].Sequence = driver.SequenceHold },
		"task":     func(p *driver.GroupInsertParams) { p.Jobs[0].Task = "a\x00" },
		"callback": func(p *driver.GroupInsertParams) {
			p.Group.Callbacks = &driver.GroupCallbacks{OnSuccess: []*driver.JobInsert{nil}}
		},
		"callback deps": func(p *driver.GroupInsertParams) {
			p.Group.Callbacks = &driver.GroupCallbacks{OnComplete: []*driver.JobInsert{{DependsOn: []string{"x"}}}}
		},
	} {
		require.Error(t, bad(change), name)
	}
	require.NoError(t, bad(func(*driver.GroupInsertParams) {}))
	_, _, err = groupkit.Prepare(nil)
	require.Error(t, err)

	added, err := groupkit.PrepareAdd(&driver.GroupAddParams{ID: "g2", Jobs: []*driver.JobInsert{job("c")}})
	require.NoError(t, err)
	require.Equal(t, "g2", added[0].GroupID)
	_, err = groupkit.PrepareAdd(&driver.GroupAddParams{ID: "g2", Jobs: []*driver.JobInsert{{UniqueKey: "u"}}})
	require.Error(t, err)
}

func TestCallbacksFollowTheOutcome(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cb := func(id string, delay time.Duration) *driver.JobInsert {
		j := job(id)
		j.CreatedAt, j.RunAt = created, created.Add(delay)
		return j
	}
	callbacks := &driver.GroupCallbacks{
		OnSuccess:  []*driver.JobInsert{cb("s", 0)},
		OnFailure:  []*driver.JobInsert{cb("f", time.Minute)},
		OnComplete: []*driver.JobInsert{cb("c", 0)},
	}
	// Stored and read back as the drivers do.
	stored, err := groupkit.CallbacksJSON(callbacks)
	require.NoError(t, err)
	var won, lost driver.GroupRow
	require.NoError(t, groupkit.Decode(&won, stored, nil, false))
	require.NoError(t, groupkit.Decode(&lost, stored, []byte(`{"failed":1,"completed":2}`), true))
	require.Equal(t, callbacks, won.Callbacks)
	require.Equal(t, map[driver.JobStatus]int{driver.StatusFailed: 1, driver.StatusCompleted: 2}, lost.Counts)
	won.ID, won.Outcome = "won", groupkit.Outcome(false)
	lost.ID, lost.Outcome = "lost", groupkit.Outcome(true)
	require.Equal(t, driver.OutcomeSuccess, won.Outcome)
	require.Equal(t, driver.OutcomeFailure, lost.Outcome)

	now := created.Add(time.Hour)
	out := groupkit.Callbacks([]*driver.GroupRow{&won, &lost, {ID: "none", Outcome: driver.OutcomeSuccess}}, now)
	var got []string
	for _, j := range out {
		got = append(got, j.CallbackOf+":"+j.ID)
		require.Equal(t, now, j.CreatedAt)
	}
	require.Equal(t, []string{"won:s", "won:c", "lost:f", "lost:c"}, got)
	require.Equal(t, now.Add(time.Minute), out[2].RunAt, "a callback's delay counts from the settle")
	require.Equal(t, now, out[0].RunAt)
	// The stored callbacks are left as they were.
	require.Empty(t, won.Callbacks.OnSuccess[0].CallbackOf)
	require.Equal(t, []string{"default"}, groupkit.Queues(out))

	none, err := groupkit.CallbacksJSON(&driver.GroupCallbacks{})
	require.NoError(t, err)
	require.Nil(t, none)
	var empty driver.GroupRow
	require.NoError(t, groupkit.Decode(&empty, nil, nil, true))
	require.Nil(t, empty.Callbacks)
	require.Equal(t, map[driver.JobStatus]int{}, empty.Counts)
	require.Error(t, groupkit.Decode(&empty, []byte(`{`), nil, false))
}
