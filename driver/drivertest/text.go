package drivertest

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

// badTexts break the text rule, one each way: no stored text equals
// either, and Postgres cannot even compare them with its text.
var badTexts = []string{"a\x00b", "q\xff"}

// lookalikes returns the texts a driver could mistake bad for: bad
// cleaned (as encoding/json encodes it) and bad cut before its first
// offending byte (as a C string ends at a NUL).
func lookalikes(bad string) []string {
	cut := strings.IndexFunc(bad, func(r rune) bool { return r == 0 || r == '\uFFFD' })
	return []string{driver.CleanText(bad, 0), bad[:cut]}
}

func textCases[TTx any]() []testCase[TTx] {
	return []testCase[TTx]{
		// A job ID or client ID that breaks the text rule names nothing,
		// not even a job of a client whose ID looks like it: JobGet is
		// ErrNotFound, the actions, JobHeld and JobChanges ignore it, and
		// a claim named by it matches nothing in JobFinalize, JobProgress
		// and JobHeartbeat.
		{name: "JobIDs", twin: true, fn: testTextJobIDs[TTx]},
		// A filter value that breaks the rule selects nothing in JobList,
		// JobStats, the actions by filter and JobClean, not even jobs with
		// values that look like it; in a list of alternatives (statuses,
		// topics, queues, tags with AnyTag) it is one that matches nothing.
		{name: "Filter", twin: true, fn: testTextFilter[TTx]},
		// JobClaim and QueueLoad of such a queue or topics find nothing.
		{name: "Claim", twin: true, fn: testTextClaim[TTx]},
		// A schedule of such a kind or name is not there, nor one whose
		// name looks like it: ScheduleGet and ScheduleDelete are
		// ErrScheduleNotFound, ScheduleUpdate and ScheduleTick match
		// nothing, ScheduleList of such a kind is empty.
		{name: "Schedule", twin: true, fn: testTextSchedule[TTx]},
		// A write that would store a row under such a key (QueueStateSet,
		// ScheduleInsert, ClientRecord) is refused with an error matching
		// ErrTextNUL or ErrTextUTF8 and writes nothing; ClientForget of
		// such an ID forgets nothing.
		{name: "Keys", twin: true, fn: testTextKeys[TTx]},
	}
}

// eachBad runs fn with every bad text, each through mode m: in a
// transaction of its own in mode Tx, which must commit after it.
func (h *harness[TTx]) eachBad(m mode, fn func(ex driver.Executor, bad string)) {
	h.t.Helper()
	for _, bad := range badTexts {
		h.via(m, func(ex driver.Executor) { fn(ex, bad) })
	}
}

func testTextJobIDs[TTx any](h *harness[TTx], m mode) {
	mine := h.started(client1, nil)
	pending := h.insert(h.newJob())[0]
	theirs := map[string][]*driver.JobRow{}
	for _, bad := range badTexts {
		for _, look := range lookalikes(bad) {
			theirs[bad] = append(theirs[bad], h.started(look, nil))
		}
	}
	h.eachBad(m, func(ex driver.Executor, bad string) {
		row, err := ex.JobGet(h.ctx, &driver.JobGetParams{ID: bad})
		require.ErrorIs(h.t, err, driver.ErrNotFound, "JobGet %q", bad)
		require.Nil(h.t, row, "JobGet %q", bad)

		held, err := ex.JobHeld(h.ctx, &driver.JobHeldParams{ClientID: client1, IDs: []string{bad, mine.ID}})
		require.NoError(h.t, err, "JobHeld of ID %q", bad)
		require.Equal(h.t, []string{mine.ID}, held, "JobHeld of ID %q", bad)
		held, err = ex.JobHeld(h.ctx, &driver.JobHeldParams{ClientID: bad, IDs: ids(theirs[bad])})
		require.NoError(h.t, err, "JobHeld by %q", bad)
		require.Empty(h.t, held, "JobHeld by %q", bad)

		until := h.at(time.Hour)
		n, err := ex.JobHeartbeat(h.ctx, &driver.JobHeartbeatParams{ClientID: bad, LockedUntil: until})
		require.NoError(h.t, err, "JobHeartbeat by %q", bad)
		require.Zero(h.t, n, "JobHeartbeat by %q", bad)
		n, err = ex.JobHeartbeat(h.ctx, &driver.JobHeartbeatParams{ClientID: client1, IDs: []string{bad}, LockedUntil: until})
		require.NoError(h.t, err, "JobHeartbeat of ID %q", bad)
		require.Zero(h.t, n, "JobHeartbeat of ID %q", bad)

		var items []*driver.JobFinalize
		var updates []*driver.JobProgressUpdate
		for _, row := range append([]*driver.JobRow{mine}, theirs[bad]...) {
			it := ending(row, driver.StatusCompleted, until)
			it.LockedBy = bad
			items = append(items, it)
			updates = append(updates, &driver.JobProgressUpdate{ID: row.ID, Attempt: row.Attempt, LockedBy: bad,
				Progress: driver.JobProgress{Percent: 50, At: until}})
		}
		byID := ending(mine, driver.StatusCompleted, until)
		byID.ID = bad
		matched, err := ex.JobFinalize(h.ctx, &driver.JobFinalizeParams{Jobs: append(items, byID)})
		require.NoError(h.t, err, "JobFinalize %q", bad)
		require.Equal(h.t, make([]bool, len(items)+1), matched, "JobFinalize %q", bad)
		updates = append(updates, &driver.JobProgressUpdate{ID: bad, Attempt: mine.Attempt, LockedBy: client1})
		matched, err = ex.JobProgress(h.ctx, &driver.JobProgressParams{Jobs: updates})
		require.NoError(h.t, err, "JobProgress %q", bad)
		require.Equal(h.t, make([]bool, len(updates)), matched, "JobProgress %q", bad)

		ch, err := ex.JobChanges(h.ctx, &driver.JobChangesParams{IDs: []string{bad, pending.ID}, Limit: 10})
		require.NoError(h.t, err, "JobChanges of ID %q", bad)
		require.Equal(h.t, []string{pending.ID}, stateIDs(ch.ByID), "JobChanges of ID %q", bad)

		for name, act := range actions(ex) {
			rows, err := act(h.ctx, &driver.JobActParams{IDs: []string{bad}, Now: until})
			require.NoError(h.t, err, "%s of ID %q", name, bad)
			require.Empty(h.t, rows, "%s of ID %q", name, bad)
		}
	})
	h.requireStored(mine)
	h.requireStored(pending)
	for _, rows := range theirs {
		for _, row := range rows {
			h.requireStored(row)
		}
	}
}

func testTextFilter[TTx any](h *harness[TTx], m mode) {
	j := h.tagged([]string{"tag"}, `{"m": "v"}`)
	j.Topic, j.Queue, j.UniqueKey = "topic", "queue", "key"
	good := h.insert(j)[0]
	for _, bad := range badTexts {
		for _, look := range lookalikes(bad) {
			meta, err := json.Marshal(map[string]string{look: "v", "m": look})
			require.NoError(h.t, err)
			j := h.tagged([]string{"tag", look}, string(meta))
			j.Topic, j.Queue, j.UniqueKey = look, look, look
			h.insert(j)
		}
	}
	h.eachBad(m, func(ex driver.Executor, bad string) {
		none := map[string]driver.JobFilter{
			"Statuses":      {Statuses: []driver.JobStatus{driver.JobStatus(bad)}},
			"Topics":        {Topics: []string{bad}},
			"Queues":        {Queues: []string{bad}},
			"UniqueKey":     {UniqueKey: bad},
			"Tags":          {Tags: []string{"tag", bad}},
			"AnyTag":        {Tags: []string{bad}, AnyTag: true},
			"MetadataKey":   {Metadata: map[string]string{bad: "v"}},
			"MetadataValue": {Metadata: map[string]string{"m": bad}},
		}
		for name, f := range none {
			h.requireFiltered(ex, f, nil, "%s %q", name, bad)
			for act, run := range actions(ex) {
				rows, err := run(h.ctx, &driver.JobActParams{Filter: f, Now: h.at(time.Hour)})
				require.NoError(h.t, err, "%s by %s %q", act, name, bad)
				require.Empty(h.t, rows, "%s by %s %q", act, name, bad)
			}
		}
		alternatives := map[string]driver.JobFilter{
			"Statuses": {Statuses: []driver.JobStatus{driver.JobStatus(bad), driver.StatusPending}, Queues: []string{"queue"}},
			"Topics":   {Topics: []string{bad, "topic"}},
			"Queues":   {Queues: []string{"queue", bad}},
			"AnyTag":   {Tags: []string{bad, "tag"}, AnyTag: true, Queues: []string{"queue"}},
		}
		for name, f := range alternatives {
			h.requireFiltered(ex, f, good, "%s %q", name, bad)
		}
		n, err := ex.JobClean(h.ctx, &driver.JobCleanParams{Status: driver.JobStatus(bad), Before: h.at(time.Hour), Limit: 10})
		require.NoError(h.t, err, "JobClean of status %q", bad)
		require.Zero(h.t, n, "JobClean of status %q", bad)
	})
	// An action by a filter with such an alternative acts on the others.
	h.via(m, func(ex driver.Executor) {
		rows, err := ex.JobCancel(h.ctx, &driver.JobActParams{
			Filter: driver.JobFilter{Topics: append([]string{"topic"}, badTexts...)}, Now: h.at(time.Hour)})
		require.NoError(h.t, err, "JobCancel")
		require.Equal(h.t, []string{good.ID}, ids(rows), "JobCancel")
	})
}

// requireFiltered requires that f selects want alone (nothing when nil)
// in JobList and JobStats through ex.
func (h *harness[TTx]) requireFiltered(ex driver.Executor, f driver.JobFilter, want *driver.JobRow, msg string, args ...any) {
	h.t.Helper()
	wantIDs, wantCounts := []string{}, []driver.JobCount{}
	if want != nil {
		wantIDs = []string{want.ID}
		wantCounts = []driver.JobCount{{Status: want.Status, Topic: want.Topic, Queue: want.Queue, Count: 1}}
	}
	with := func(what string) []any { return append([]any{what + " " + msg}, args...) }
	res, err := ex.JobList(h.ctx, &driver.JobListParams{Filter: f, Limit: 10})
	require.NoError(h.t, err, with("JobList")...)
	require.Equal(h.t, wantIDs, ids(res.Jobs), with("JobList")...)
	require.Equal(h.t, len(wantIDs), res.Total, with("JobList total")...)
	st, err := ex.JobStats(h.ctx, &driver.JobStatsParams{Filter: f, Since: h.at(-time.Hour), Bucket: time.Minute})
	require.NoError(h.t, err, with("JobStats")...)
	require.ElementsMatch(h.t, wantCounts, st.Counts, with("JobStats")...)
	require.NotNil(h.t, st.Series, with("JobStats series")...)
}

func testTextClaim[TTx any](h *harness[TTx], m mode) {
	job := h.insert(h.newJob())[0]
	for _, bad := range badTexts {
		for _, look := range lookalikes(bad) {
			// A job of a topic, and one running in a queue, like bad.
			j := h.newJob()
			j.Topic = look
			h.insert(j)
			j = h.newJob()
			j.Queue = look
			h.started(client1, j)
		}
	}
	h.eachBad(m, func(ex driver.Executor, bad string) {
		for _, flow := range []bool{false, true} {
			p := claimParams(h.base, job.Topic)
			p.Queue, p.Flow = bad, flow
			require.Empty(h.t, h.claimVia(ex, p), "claim from queue %q, flow %v", bad, flow)
			p = claimParams(h.base, bad)
			p.Flow = flow
			require.Empty(h.t, h.claimVia(ex, p), "claim of topic %q, flow %v", bad, flow)
		}
		// A place after the job in claim order: the job is ahead of it.
		place := driver.QueueLoadParams{Queue: job.Queue, Now: h.base, Priority: job.Priority + 1, RunAt: h.base,
			ID: "ffffffff-ffff-7fff-bfff-ffffffffffff", AheadLimit: 10}
		for _, c := range []struct {
			queue  string
			topics []string
			ahead  int
		}{{bad, nil, 0}, {job.Queue, []string{bad}, 0}, {job.Queue, []string{bad, job.Topic}, 1}} {
			p := place
			p.Queue, p.Topics = c.queue, c.topics
			load, err := ex.QueueLoad(h.ctx, &p)
			require.NoError(h.t, err, "QueueLoad of %q, topics %q", c.queue, c.topics)
			require.Equal(h.t, &driver.QueueLoad{Running: map[string]int{}, Ahead: c.ahead}, load,
				"QueueLoad of %q, topics %q", c.queue, c.topics)
		}
	})
	h.requireStored(job)
	var claimed []*driver.JobRow
	h.via(m, func(ex driver.Executor) {
		claimed = h.claimVia(ex, claimParams(h.base, append([]string{job.Topic}, badTexts...)...))
	})
	require.Equal(h.t, []string{job.ID}, ids(claimed), "claim of the job's topic among bad ones")
}

func testTextSchedule[TTx any](h *harness[TTx], m mode) {
	s := h.insertSchedule(h.exec(), h.newSchedule("s"))
	var looks []*driver.ScheduleRow
	for _, bad := range badTexts {
		for _, look := range lookalikes(bad) {
			looks = append(looks, h.insertSchedule(h.exec(), h.newSchedule(look)))
		}
	}
	h.eachBad(m, func(ex driver.Executor, bad string) {
		for _, key := range []struct {
			kind driver.ScheduleKind
			name string
		}{{driver.ScheduleStored, bad}, {driver.ScheduleKind(bad), s.Name}} {
			got, err := ex.ScheduleGet(h.ctx, &driver.ScheduleGetParams{Kind: key.kind, Name: key.name})
			require.ErrorIs(h.t, err, driver.ErrScheduleNotFound, "ScheduleGet %q/%q", key.kind, key.name)
			require.Nil(h.t, got, "ScheduleGet %q/%q", key.kind, key.name)
			got, err = ex.ScheduleDelete(h.ctx, &driver.ScheduleDeleteParams{Kind: key.kind, Name: key.name})
			require.ErrorIs(h.t, err, driver.ErrScheduleNotFound, "ScheduleDelete %q/%q", key.kind, key.name)
			require.Nil(h.t, got, "ScheduleDelete %q/%q", key.kind, key.name)

			def := h.newSchedule(s.Name)
			def.Kind, def.Name, def.Cron = key.kind, key.name, "0 * * * *"
			got, err = ex.ScheduleUpdate(h.ctx, &driver.ScheduleUpdateParams{Schedule: def, Version: s.Version})
			require.NoError(h.t, err, "ScheduleUpdate %q/%q", key.kind, key.name)
			require.Nil(h.t, got, "ScheduleUpdate %q/%q", key.kind, key.name)

			res, err := ex.ScheduleTick(h.ctx, &driver.ScheduleTickParams{Kind: key.kind, Name: key.name,
				Version: s.Version, Tick: h.base, NextRunAt: h.at(time.Hour), Job: h.tickJob(s, h.base)})
			require.NoError(h.t, err, "ScheduleTick %q/%q", key.kind, key.name)
			require.False(h.t, res.Matched, "ScheduleTick %q/%q", key.kind, key.name)
		}
		list, err := ex.ScheduleList(h.ctx, &driver.ScheduleListParams{Kind: driver.ScheduleKind(bad)})
		require.NoError(h.t, err, "ScheduleList of kind %q", bad)
		require.Empty(h.t, list, "ScheduleList of kind %q", bad)
	})
	for _, want := range append(looks, s) {
		h.requireScheduleStored(want)
	}
	require.Zero(h.t, h.listVia(h.exec(), &driver.JobListParams{Limit: 1}).Total, "jobs inserted by ticks")
}

func testTextKeys[TTx any](h *harness[TTx], m mode) {
	var recorded []string
	for _, bad := range badTexts {
		for _, look := range lookalikes(bad) {
			recorded = append(recorded, look)
			h.recordVia(direct, &driver.ClientRecordParams{Client: h.clientRow(look, h.base)})
		}
	}
	for _, bad := range badTexts {
		want := driver.CheckText(bad)
		// An error leaves a caller's transaction to be rolled back.
		h.inTxIf(m.tx, func(ex driver.Executor) {
			st, err := ex.QueueStateSet(h.ctx, &driver.QueueStateSetParams{Queue: bad, Paused: ptr(true), Now: h.base})
			require.ErrorIs(h.t, err, want, "QueueStateSet of %q", bad)
			require.Nil(h.t, st, "QueueStateSet of %q", bad)
		})
		byKind := h.newSchedule("s")
		byKind.Kind = driver.ScheduleKind(bad)
		for _, s := range []*driver.ScheduleRow{h.newSchedule(bad), byKind} {
			h.inTxIf(m.tx, func(ex driver.Executor) {
				got, err := ex.ScheduleInsert(h.ctx, &driver.ScheduleInsertParams{Schedule: s})
				require.ErrorIs(h.t, err, want, "ScheduleInsert %q/%q", s.Kind, s.Name)
				require.Nil(h.t, got, "ScheduleInsert %q/%q", s.Kind, s.Name)
			})
		}
		h.inTxIf(m.tx, func(ex driver.Executor) {
			err := ex.ClientRecord(h.ctx, &driver.ClientRecordParams{Client: h.clientRow(bad, h.base)})
			require.ErrorIs(h.t, err, want, "ClientRecord %q", bad)
		})
	}
	h.eachBad(m, func(ex driver.Executor, bad string) {
		require.NoError(h.t, ex.ClientForget(h.ctx, &driver.ClientForgetParams{ID: bad}), "ClientForget %q", bad)
	})
	states, err := h.exec().QueueStateList(h.ctx, &driver.QueueStateListParams{})
	require.NoError(h.t, err, "QueueStateList")
	require.Empty(h.t, states, "queue states")
	schedules, err := h.exec().ScheduleList(h.ctx, &driver.ScheduleListParams{})
	require.NoError(h.t, err, "ScheduleList")
	require.Empty(h.t, schedules, "schedules")
	var kept []string
	for _, c := range h.clients(time.Time{}) {
		kept = append(kept, c.ID)
	}
	require.ElementsMatch(h.t, recorded, kept, "clients")
}

// inTxIf runs fn in a transaction that is rolled back after it when tx is
// true, and with the driver's own executor otherwise.
func (h *harness[TTx]) inTxIf(tx bool, fn func(ex driver.Executor)) {
	h.t.Helper()
	if tx {
		h.inTx(false, fn)
		return
	}
	fn(h.exec())
}

// actions returns the operator's actions of ex, by name.
func actions(ex driver.Executor) map[string]func(context.Context, *driver.JobActParams) ([]*driver.JobRow, error) {
	return map[string]func(context.Context, *driver.JobActParams) ([]*driver.JobRow, error){
		"JobCancel": ex.JobCancel, "JobRequeue": ex.JobRequeue, "JobDelete": ex.JobDelete, "JobRetryNow": ex.JobRetryNow,
	}
}

// stateIDs returns the IDs of states, in order.
func stateIDs(states []*driver.JobState) []string {
	out := make([]string, len(states))
	for i, s := range states {
		out[i] = s.ID
	}
	return out
}
