package drivertest

import (
	"fmt"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func changesCases[TTx any]() []testCase[TTx] {
	return []testCase[TTx]{
		// Running holds exactly the processing jobs, as JobGet reads
		// them, progress and the count of records logged included; Limit
		// caps it.
		{name: "Running", twin: true, fn: testChangesRunning[TTx]},
		// ByID holds the jobs of the IDs that exist, whatever their
		// status, with the count of records their outcomes logged;
		// unknown IDs and IDs that are no UUIDs are left out.
		{name: "ByID", twin: true, fn: testChangesByID[TTx]},
		// Created holds exactly the jobs whose IDs are in the range, a
		// range of version 7 IDs being a span of creation times.
		{name: "Created", twin: true, fn: testChangesCreated[TTx]},
		// Finalized holds exactly the jobs completed, failed or cancelled
		// at or after FinalizedSince.
		{name: "Finalized", twin: true, fn: testChangesFinalized[TTx]},
		// Requeues and deletes are noted in the log of actions: Acted holds
		// the requeued jobs as they are, Deleted the deleted ones' IDs,
		// topics and queues; entries older than ActLogRetention go.
		{name: "Acted", twin: true, fn: testChangesActed[TTx]},
		// CountOnly counts what each part would hold, up to Limit, and
		// reads none of it.
		{name: "Count", twin: true, fn: testChangesCount[TTx]},
		// A part not asked for is nil; a Limit below 1 is an error.
		{name: "Parts", fn: testChangesParts[TTx]},
	}
}

// requireStates requires got to hold the states of exactly the stored jobs
// ids, in any order.
func (h *harness[TTx]) requireStates(ids []string, got []*driver.JobState, msg string) {
	h.t.Helper()
	require.NotNil(h.t, got, msg)
	gotIDs := make([]string, len(got))
	for i, s := range got {
		gotIDs[i] = s.ID
	}
	require.ElementsMatch(h.t, ids, gotIDs, msg)
	for _, s := range got {
		want := h.get(s.ID).State()
		m := msg + ": job " + s.ID
		require.Equal(h.t, want.Topic, s.Topic, m+".Topic")
		require.Equal(h.t, want.Queue, s.Queue, m+".Queue")
		require.Equal(h.t, want.Status, s.Status, m+".Status")
		require.Equal(h.t, want.Attempt, s.Attempt, m+".Attempt")
		require.Equal(h.t, want.MaxRetries, s.MaxRetries, m+".MaxRetries")
		require.Equal(h.t, want.LockedBy, s.LockedBy, m+".LockedBy")
		requireTime(h.t, want.RunAt, s.RunAt, m+".RunAt")
		requireTime(h.t, want.CreatedAt, s.CreatedAt, m+".CreatedAt")
		requireTime(h.t, want.AttemptedAt, s.AttemptedAt, m+".AttemptedAt")
		requireTime(h.t, want.FinalizedAt, s.FinalizedAt, m+".FinalizedAt")
		requireProgress(h.t, want.Progress, s.Progress, m+".Progress")
		require.Equal(h.t, want.Logged, s.Logged, m+".Logged")
	}
}

// changesVia reads changes through mode m.
func (h *harness[TTx]) changesVia(m mode, p *driver.JobChangesParams) *driver.JobChanges {
	h.t.Helper()
	var res *driver.JobChanges
	h.via(m, func(ex driver.Executor) {
		var err error
		res, err = ex.JobChanges(h.ctx, p)
		require.NoError(h.t, err, "JobChanges")
	})
	require.NotNil(h.t, res, "JobChanges")
	return res
}

func testChangesRunning[TTx any](h *harness[TTx], m mode) {
	res := h.changesVia(m, &driver.JobChangesParams{Running: true, Limit: 10})
	h.requireStates(nil, res.Running, "no job")
	var running []string
	for i := range 5 {
		row := h.started(client1, nil)
		if i < 3 {
			running = append(running, row.ID)
		}
		switch i {
		case 0:
			_, err := h.exec().JobProgress(h.ctx, &driver.JobProgressParams{Jobs: []*driver.JobProgressUpdate{
				progressing(row, 40, "forty", h.at(time.Second))}})
			require.NoError(h.t, err)
		case 1:
			// Logs alone: Logged counts the records kept and dropped.
			u := progressing(row, 0, "", h.at(time.Second))
			u.KeepProgress, u.Logs = true, h.logs(3, row.Attempt, 2, h.at(time.Second))
			_, err := h.exec().JobProgress(h.ctx, &driver.JobProgressParams{Jobs: []*driver.JobProgressUpdate{u}})
			require.NoError(h.t, err)
			require.Equal(h.t, 5, h.get(row.ID).State().Logged, "3 records kept, 2 dropped")
		case 3:
			h.finalize(ending(row, driver.StatusCompleted, h.at(time.Second)))
		case 4:
			h.finalize(retrying(row, h.at(time.Minute), nil))
		}
	}
	h.insert(h.newJob()) // pending
	res = h.changesVia(m, &driver.JobChangesParams{Running: true, Limit: 10})
	h.requireStates(running, res.Running, "running jobs")
	res = h.changesVia(m, &driver.JobChangesParams{Running: true, Limit: 2})
	require.Len(h.t, res.Running, 2, "Limit 2")
	require.Subset(h.t, running, []string{res.Running[0].ID, res.Running[1].ID}, "Limit 2")
}

func testChangesByID[TTx any](h *harness[TTx], m mode) {
	pending := h.insert(h.newJob())[0]
	running := h.started(client1, nil)
	done := h.started(client1, nil)
	// Jobs whose outcome wrote logs, alone and with an error: Logged
	// counts the records kept and dropped.
	end := ending(done, driver.StatusFailed, h.at(time.Second))
	end.Logs = h.logs(2, done.Attempt, 1, h.at(time.Second))
	h.finalize(end)
	require.Equal(h.t, 3, h.get(done.ID).State().Logged)
	retried := h.started(client1, nil)
	again := retrying(retried, h.at(time.Minute), &driver.AttemptError{Attempt: 1, At: h.at(time.Second), Error: "e"})
	again.Logs = h.logs(1, retried.Attempt, 0, h.at(time.Second))
	h.finalize(again)
	require.Equal(h.t, 1, h.get(retried.ID).State().Logged)
	ids := []string{pending.ID, running.ID, done.ID, retried.ID, newID(), "not-a-uuid"}
	res := h.changesVia(m, &driver.JobChangesParams{IDs: ids, Limit: 10})
	h.requireStates(ids[:4], res.ByID, "known IDs")
	res = h.changesVia(m, &driver.JobChangesParams{IDs: []string{}, Limit: 10})
	h.requireStates(nil, res.ByID, "no IDs")
	res = h.changesVia(m, &driver.JobChangesParams{IDs: []string{"not-a-uuid"}, Limit: 10})
	h.requireStates(nil, res.ByID, "an ID that is no UUID")
}

// idAt returns a version 7 UUID of time at with the sequence n.
func idAt(at time.Time, n int) string {
	ms := at.UnixMilli()
	return fmt.Sprintf("%08x-%04x-7%03x-8%03x-%012x", ms>>16, ms&0xffff, n&0xfff, 0, n)
}

// idFloor returns the smallest UUID of millisecond at: the first ID of a
// range of the jobs created from at on.
func idFloor(at time.Time) string {
	ms := at.UnixMilli()
	return fmt.Sprintf("%08x-%04x-0000-0000-000000000000", ms>>16, ms&0xffff)
}

func testChangesCreated[TTx any](h *harness[TTx], m mode) {
	var all []*driver.JobRow
	for i := range 10 {
		j := h.newJob()
		j.ID = idAt(h.at(time.Duration(i)*time.Second), i)
		all = append(all, h.insert(j)[0])
	}
	// Jobs whose IDs are no version 7 UUIDs (random ones) fall outside
	// any recent range.
	h.insert(h.newJob(), h.newJob())
	h.started(client1, &driver.JobInsert{ID: idAt(h.at(4*time.Second), 99), Topic: "created_running",
		Queue: "default", Payload: []byte(`{}`), RunAt: h.base, CreatedAt: h.base})
	from, before := h.at(3*time.Second), h.at(7*time.Second)
	want := []string{all[3].ID, all[4].ID, all[5].ID, all[6].ID, idAt(h.at(4*time.Second), 99)}
	res := h.changesVia(m, &driver.JobChangesParams{CreatedFrom: idFloor(from), CreatedBefore: idFloor(before), Limit: 100})
	h.requireStates(want, res.Created, "IDs from 3 s to 7 s")
	res = h.changesVia(m, &driver.JobChangesParams{CreatedFrom: idFloor(from), CreatedBefore: idFloor(before), Limit: 2})
	require.Len(h.t, res.Created, 2, "Limit 2")
	for _, s := range res.Created {
		require.Contains(h.t, want, s.ID, "Limit 2")
	}
	res = h.changesVia(m, &driver.JobChangesParams{CreatedFrom: idFloor(h.at(time.Hour)), CreatedBefore: idFloor(h.at(2 * time.Hour)), Limit: 2})
	h.requireStates(nil, res.Created, "a range without jobs")
}

func testChangesFinalized[TTx any](h *harness[TTx], m mode) {
	var finished []*driver.JobRow
	for i, status := range []driver.JobStatus{driver.StatusCompleted, driver.StatusFailed, driver.StatusCompleted,
		driver.StatusFailed, driver.StatusCompleted} {
		row := h.started(client1, nil)
		h.finalize(ending(row, status, h.at(time.Duration(i)*time.Second)))
		finished = append(finished, row)
	}
	pending := h.insert(h.newJob())[0]
	_, err := h.exec().JobCancel(h.ctx, &driver.JobActParams{IDs: []string{pending.ID}, Now: h.at(3 * time.Second)})
	require.NoError(h.t, err)
	h.started(client1, nil)
	h.insert(h.newJob())
	want := []string{finished[2].ID, finished[3].ID, finished[4].ID, pending.ID}
	res := h.changesVia(m, &driver.JobChangesParams{FinalizedSince: h.at(2 * time.Second), Limit: 100})
	h.requireStates(want, res.Finalized, "finished since 2 s")
	res = h.changesVia(m, &driver.JobChangesParams{FinalizedSince: h.at(2 * time.Second), Limit: 3})
	require.Len(h.t, res.Finalized, 3, "Limit 3")
	res = h.changesVia(m, &driver.JobChangesParams{FinalizedSince: h.at(time.Minute), Limit: 3})
	h.requireStates(nil, res.Finalized, "finished since a minute")
}

func testChangesActed[TTx any](h *harness[TTx], m mode) {
	failed := h.started(client1, nil)
	h.finalize(ending(failed, driver.StatusFailed, h.at(time.Second)))
	gone := h.insert(h.newJob())[0]
	later := h.insert(h.newJob())[0]
	_, err := h.exec().JobCancel(h.ctx, &driver.JobActParams{IDs: []string{later.ID}, Now: h.at(2 * time.Second)})
	require.NoError(h.t, err)
	h.via(m, func(ex driver.Executor) {
		_, err := ex.JobRequeue(h.ctx, &driver.JobActParams{IDs: []string{failed.ID}, Now: h.at(5 * time.Second), Retries: 3})
		require.NoError(h.t, err, "JobRequeue")
		_, err = ex.JobDelete(h.ctx, &driver.JobActParams{IDs: []string{gone.ID}, Now: h.at(6 * time.Second)})
		require.NoError(h.t, err, "JobDelete")
	})
	res := h.changesVia(m, &driver.JobChangesParams{ActedSince: h.at(4 * time.Second), Limit: 10})
	h.requireStates([]string{failed.ID}, res.Acted, "requeued")
	require.Equal(h.t, driver.StatusPending, res.Acted[0].Status)
	require.Equal(h.t, []*driver.JobState{{ID: gone.ID, Topic: gone.Topic, Queue: gone.Queue}}, res.Deleted, "deleted")
	res = h.changesVia(m, &driver.JobChangesParams{ActedSince: h.at(7 * time.Second), Limit: 10})
	h.requireStates(nil, res.Acted, "acted since 7 s")
	require.Empty(h.t, res.Deleted, "deleted since 7 s")

	// An action an hour later prunes the entries of the first.
	_, err = h.exec().JobRequeue(h.ctx, &driver.JobActParams{IDs: []string{later.ID}, Now: h.at(time.Hour), Retries: 3})
	require.NoError(h.t, err)
	res = h.changesVia(m, &driver.JobChangesParams{ActedSince: h.at(-time.Hour), Limit: 10})
	h.requireStates([]string{later.ID}, res.Acted, "acted after pruning")
	require.Empty(h.t, res.Deleted, "deleted after pruning")
}

func testChangesCount[TTx any](h *harness[TTx], m mode) {
	var running []string
	for range 3 {
		running = append(running, h.started(client1, nil).ID)
	}
	for i := range 4 {
		j := h.newJob()
		j.ID = idAt(h.at(time.Duration(i)*time.Second), i)
		h.insert(j)
	}
	for _, status := range []driver.JobStatus{driver.StatusCompleted, driver.StatusFailed} {
		h.finalize(ending(h.started(client1, nil), status, h.at(time.Minute)))
	}
	gone, kept := h.insert(h.newJob())[0], h.insert(h.newJob())[0]
	_, err := h.exec().JobCancel(h.ctx, &driver.JobActParams{IDs: []string{kept.ID}, Now: h.at(-time.Hour)})
	require.NoError(h.t, err)
	_, err = h.exec().JobRequeue(h.ctx, &driver.JobActParams{IDs: []string{kept.ID}, Now: h.at(time.Minute), Retries: 3})
	require.NoError(h.t, err)
	_, err = h.exec().JobDelete(h.ctx, &driver.JobActParams{IDs: []string{gone.ID}, Now: h.at(time.Minute)})
	require.NoError(h.t, err)
	p := &driver.JobChangesParams{Running: true, IDs: running, CreatedFrom: idFloor(h.at(-time.Second)),
		CreatedBefore: idFloor(h.at(10 * time.Second)), FinalizedSince: h.at(time.Second), ActedSince: h.at(time.Second),
		Limit: 100, CountOnly: true}
	res := h.changesVia(m, p)
	require.Equal(h.t, driver.JobChangeCounts{Running: 3, Created: 4, Finalized: 2, Acted: 2}, res.Counted)
	require.Nil(h.t, res.Running, "nothing read")
	require.Nil(h.t, res.ByID, "nothing read")
	require.Nil(h.t, res.Created, "nothing read")
	require.Nil(h.t, res.Finalized, "nothing read")
	require.Nil(h.t, res.Acted, "nothing read")
	require.Nil(h.t, res.Deleted, "nothing read")
	p.Limit = 2
	res = h.changesVia(m, p)
	require.Equal(h.t, driver.JobChangeCounts{Running: 2, Created: 2, Finalized: 2, Acted: 2}, res.Counted, "at most Limit")
}

func testChangesParts[TTx any](h *harness[TTx], _ mode) {
	h.started(client1, nil)
	res := h.changesVia(direct, &driver.JobChangesParams{Limit: 1})
	require.Nil(h.t, res.Running, "Running not asked")
	require.Nil(h.t, res.ByID, "ByID not asked")
	require.Nil(h.t, res.Created, "Created not asked")
	require.Nil(h.t, res.Finalized, "Finalized not asked")
	require.Nil(h.t, res.Acted, "Acted not asked")
	require.Nil(h.t, res.Deleted, "Deleted not asked")
	res = h.changesVia(direct, &driver.JobChangesParams{Running: true, Limit: 1})
	require.Len(h.t, res.Running, 1)
	require.Nil(h.t, res.Finalized, "Finalized not asked")
	_, err := h.exec().JobChanges(h.ctx, &driver.JobChangesParams{Running: true})
	require.Error(h.t, err, "Limit 0")
	ids := []string{"000", "111", "222"}
	res = h.changesVia(direct, &driver.JobChangesParams{IDs: ids, Limit: 1})
	require.NotNil(h.t, res.ByID, "ByID asked")
	require.Empty(h.t, res.ByID, "ByID of IDs that are no UUIDs")
}
