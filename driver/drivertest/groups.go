package drivertest

import (
	"fmt"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func groupCases[TTx any]() []testCase[TTx] {
	return []testCase[TTx]{
		// A group and its jobs are stored together, read back with its
		// counts, its jobs carrying its ID and their task names; the jobs
		// are selected by group.
		{name: "Insert", twin: true, fn: testGroupInsert[TTx]},
		// A group inserted in a transaction that rolls back leaves
		// neither the group nor any job.
		{name: "InsertRollback", fn: testGroupInsertRollback[TTx]},
		// The outcome that finishes a group's last job inserts its
		// callbacks in the same transaction: on success, or on failure,
		// and on completion either way; never twice.
		{name: "SettleOnFinalize", fn: testGroupSettleOnFinalize[TTx]},
		// Two outcomes finishing a group's last two jobs at once, and two
		// passes after them, settle it once.
		{name: "SettleConcurrent", fn: testGroupSettleConcurrent[TTx]},
		// An open group takes more jobs and does not settle; closed, it
		// settles once done, and takes no more.
		{name: "Open", fn: testGroupOpen[TTx]},
		// A group finished by a cancel settles at the next GroupSettle,
		// once.
		{name: "SettleSweep", fn: testGroupSettleSweep[TTx]},
		// A release or a settle of named groups touches the waiting jobs
		// and the groups named alone; the other groups' wait for a pass
		// over every one, and IDs that name no group settle nothing.
		{name: "ReleaseSettleByGroup", fn: testGroupReleaseSettleByGroup[TTx]},
		// A retry requeues the failed jobs, makes the dependants cancelled
		// because of them wait again, and unsettles the group.
		{name: "Retry", fn: testGroupRetry[TTx]},
		// Groups list newest first, by kind and name, page by page; a
		// settled group with no job left is cleaned.
		{name: "ListClean", fn: testGroupListClean[TTx]},
	}
}

// group returns a group of kind with name, created at base.
func (h *harness[TTx]) group(kind driver.GroupKind, name string) driver.GroupRow {
	return driver.GroupRow{ID: newID(), Kind: kind, Name: name, CreatedAt: h.base}
}

func (h *harness[TTx]) insertGroup(g driver.GroupRow, jobs ...*driver.JobInsert) *driver.GroupRow {
	h.t.Helper()
	got, err := h.exec().GroupInsert(h.ctx, &driver.GroupInsertParams{Group: g, Jobs: jobs})
	require.NoError(h.t, err, "GroupInsert")
	require.Len(h.t, got.Jobs, len(jobs))
	return got.Group
}

func (h *harness[TTx]) getGroup(id string) *driver.GroupRow {
	h.t.Helper()
	g, err := h.exec().GroupGet(h.ctx, &driver.GroupGetParams{ID: id})
	require.NoError(h.t, err, "GroupGet")
	return g
}

// callbacksOf returns the jobs inserted as the callbacks of group id.
func (h *harness[TTx]) callbacksOf(id string, topics ...string) []*driver.JobRow {
	h.t.Helper()
	list, err := h.exec().JobList(h.ctx, &driver.JobListParams{Filter: driver.JobFilter{Topics: topics}, Limit: 100})
	require.NoError(h.t, err)
	var out []*driver.JobRow
	for _, j := range list.Jobs {
		if j.CallbackOf == id {
			out = append(out, j)
		}
	}
	return out
}

// members returns n new jobs, each of a topic of its own (see newJob).
func (h *harness[TTx]) members(n int) []*driver.JobInsert {
	jobs := make([]*driver.JobInsert, n)
	for i := range jobs {
		jobs[i] = h.newJob()
	}
	return jobs
}

// endGroupJob claims the job and finalizes it with status, as a worker of
// its group.
func (h *harness[TTx]) endGroupJob(j *driver.JobInsert, status driver.JobStatus) []bool {
	h.t.Helper()
	row := h.claimJob(pendingRow(j), client1, h.base, h.at(time.Minute))
	fin := ending(row, status, h.at(time.Second))
	fin.GroupID = row.GroupID
	return h.finalizeVia(h.exec(), fin)
}

func testGroupInsert[TTx any](h *harness[TTx], m mode) {
	t := h.t
	a, b := h.newJob(), h.newJob()
	a.Task, b.Task = "resize", "album"
	b.DependsOn, b.OnDependencyFailure = []string{a.ID}, driver.DependencyCancel
	g := h.group(driver.GroupWorkflow, "album")
	h.via(m, func(ex driver.Executor) {
		got, err := ex.GroupInsert(h.ctx, &driver.GroupInsertParams{Group: g, Jobs: []*driver.JobInsert{a, b}})
		require.NoError(t, err)
		require.Equal(t, g.ID, got.Group.ID)
		requireRow(t, pendingRow(a), got.Jobs[0])
		require.True(t, got.Jobs[1].Waiting)
	})
	stored := h.getGroup(g.ID)
	require.Equal(t, driver.GroupWorkflow, stored.Kind)
	require.Equal(t, "album", stored.Name)
	require.Equal(t, h.base, stored.CreatedAt)
	require.Equal(t, map[driver.JobStatus]int{driver.StatusPending: 2}, stored.Counts)
	require.True(t, stored.SettledAt.IsZero())
	ra := h.get(a.ID)
	require.Equal(t, g.ID, ra.GroupID)
	require.Equal(t, "resize", ra.Task)
	require.True(t, h.get(b.ID).Waiting)
	list, err := h.exec().JobList(h.ctx, &driver.JobListParams{Filter: driver.JobFilter{GroupIDs: []string{g.ID}}, Limit: 10})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{a.ID, b.ID}, ids(list.Jobs))
	_, err = h.exec().GroupGet(h.ctx, &driver.GroupGetParams{ID: newID()})
	require.ErrorIs(t, err, driver.ErrNotFound)
	bad := h.group(driver.GroupBatch, "bad")
	u := h.newJob()
	u.UniqueKey = "u"
	_, err = h.exec().GroupInsert(h.ctx, &driver.GroupInsertParams{Group: bad, Jobs: []*driver.JobInsert{u}})
	require.Error(t, err, "a job of a group with a unique key")
}

func testGroupInsertRollback[TTx any](h *harness[TTx], _ mode) {
	t := h.t
	j := h.newJob()
	g := h.group(driver.GroupBatch, "rolled back")
	h.inTx(false, func(ex driver.Executor) {
		_, err := ex.GroupInsert(h.ctx, &driver.GroupInsertParams{Group: g, Jobs: []*driver.JobInsert{j}})
		require.NoError(t, err)
	})
	_, err := h.exec().GroupGet(h.ctx, &driver.GroupGetParams{ID: g.ID})
	require.ErrorIs(t, err, driver.ErrNotFound)
	h.requireNotFound(j.ID)
}

// callbacks returns callbacks of one job each, of topics on_success,
// on_failure and on_complete.
func (h *harness[TTx]) callbacks() *driver.GroupCallbacks {
	c := &driver.GroupCallbacks{}
	for _, list := range []*[]*driver.JobInsert{&c.OnSuccess, &c.OnFailure, &c.OnComplete} {
		*list = h.jobs(1, "cb")
	}
	c.OnSuccess[0].Topic, c.OnFailure[0].Topic, c.OnComplete[0].Topic = "on_success", "on_failure", "on_complete"
	return c
}

func testGroupSettleOnFinalize[TTx any](h *harness[TTx], _ mode) {
	t := h.t
	for _, tc := range []struct {
		name   string
		second driver.JobStatus
		want   []string
		out    driver.GroupOutcome
	}{
		{"success", driver.StatusCompleted, []string{"on_success", "on_complete"}, driver.OutcomeSuccess},
		{"failure", driver.StatusFailed, []string{"on_failure", "on_complete"}, driver.OutcomeFailure},
	} {
		jobs := h.members(2)
		g := h.group(driver.GroupBatch, tc.name)
		g.Callbacks = h.callbacks()
		h.insertGroup(g, jobs...)
		require.Equal(t, []bool{true}, h.endGroupJob(jobs[0], driver.StatusCompleted))
		require.Empty(t, h.callbacksOf(g.ID, "on_success", "on_failure", "on_complete"), "%s: one job left", tc.name)
		require.Equal(t, []bool{true}, h.endGroupJob(jobs[1], tc.second))
		var topics []string
		for _, cb := range h.callbacksOf(g.ID, "on_success", "on_failure", "on_complete") {
			topics = append(topics, cb.Topic)
			require.Equal(t, driver.StatusPending, cb.Status)
			require.Empty(t, cb.GroupID)
		}
		require.ElementsMatch(t, tc.want, topics, tc.name)
		stored := h.getGroup(g.ID)
		require.Equal(t, tc.out, stored.Outcome, tc.name)
		require.Equal(t, h.at(time.Second), stored.SettledAt, tc.name)
		settled, err := h.exec().GroupSettle(h.ctx, &driver.GroupSettleParams{Now: h.at(time.Hour), Limit: 10})
		require.NoError(t, err)
		require.Empty(t, settled, "%s: settled once", tc.name)
	}
}

func testGroupSettleConcurrent[TTx any](h *harness[TTx], _ mode) {
	t := h.t
	for round := range 5 {
		jobs := h.members(2)
		g := h.group(driver.GroupBatch, "pair")
		g.Callbacks = &driver.GroupCallbacks{OnComplete: h.jobs(1, "done")}
		h.insertGroup(g, jobs...)
		rows := make([]*driver.JobRow, 2)
		for i, j := range jobs {
			rows[i] = h.claimJob(pendingRow(j), client1, h.base, h.at(time.Minute))
		}
		var wg sync.WaitGroup
		for _, row := range rows {
			wg.Go(func() {
				fin := ending(row, driver.StatusCompleted, h.at(time.Second))
				fin.GroupID = g.ID
				if _, err := h.exec().JobFinalize(h.ctx, &driver.JobFinalizeParams{Jobs: []*driver.JobFinalize{fin}}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		// Each outcome may have seen the other's job live: then neither
		// settled, and the passes of two clients at once settle it.
		for range 2 {
			wg.Go(func() {
				if _, err := h.exec().GroupSettle(h.ctx, &driver.GroupSettleParams{Now: h.at(2 * time.Second), Limit: 10}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		require.Len(t, h.callbacksOf(g.ID, "done"), 1, "round %d", round)
	}
}

func testGroupOpen[TTx any](h *harness[TTx], _ mode) {
	t := h.t
	g := h.group(driver.GroupBatch, "open")
	g.Open = true
	g.Callbacks = &driver.GroupCallbacks{OnComplete: h.jobs(1, "done")}
	first := h.members(1)
	h.insertGroup(g, first...)
	h.endGroupJob(first[0], driver.StatusCompleted)
	require.Empty(t, h.callbacksOf(g.ID, "done"), "an open group does not settle")
	more := h.members(1)
	rows, err := h.exec().GroupAdd(h.ctx, &driver.GroupAddParams{ID: g.ID, Jobs: more})
	require.NoError(t, err)
	require.Equal(t, g.ID, rows[0].GroupID)
	got, err := h.exec().GroupClose(h.ctx, &driver.GroupCloseParams{ID: g.ID, Now: h.at(time.Second)})
	require.NoError(t, err)
	require.False(t, got.Open)
	require.True(t, got.SettledAt.IsZero(), "a job still pending")
	_, err = h.exec().GroupAdd(h.ctx, &driver.GroupAddParams{ID: g.ID, Jobs: h.jobs(1, "late")})
	require.ErrorIs(t, err, driver.ErrGroupClosed)
	_, err = h.exec().GroupAdd(h.ctx, &driver.GroupAddParams{ID: newID(), Jobs: h.jobs(1, "late")})
	require.ErrorIs(t, err, driver.ErrNotFound)
	h.endGroupJob(more[0], driver.StatusCompleted)
	require.Len(t, h.callbacksOf(g.ID, "done"), 1)
	// A group closed with nothing live settles as it closes.
	empty := h.group(driver.GroupBatch, "empty")
	empty.Open = true
	empty.Callbacks = &driver.GroupCallbacks{OnSuccess: h.jobs(1, "empty_done")}
	h.insertGroup(empty)
	got, err = h.exec().GroupClose(h.ctx, &driver.GroupCloseParams{ID: empty.ID, Now: h.at(time.Second)})
	require.NoError(t, err)
	require.Equal(t, driver.OutcomeSuccess, got.Outcome)
	require.Len(t, h.callbacksOf(empty.ID, "empty_done"), 1)
}

func testGroupSettleSweep[TTx any](h *harness[TTx], _ mode) {
	t := h.t
	jobs := h.members(1)
	g := h.group(driver.GroupBatch, "swept")
	g.Callbacks = h.callbacks()
	h.insertGroup(g, jobs...)
	_, err := h.exec().JobCancel(h.ctx, &driver.JobActParams{IDs: []string{jobs[0].ID}, Now: h.at(time.Second)})
	require.NoError(t, err)
	require.Empty(t, h.callbacksOf(g.ID, "on_failure", "on_complete"), "a cancel does not settle")
	settled, err := h.exec().GroupSettle(h.ctx, &driver.GroupSettleParams{Now: h.at(2 * time.Second), Limit: 10})
	require.NoError(t, err)
	require.Len(t, settled, 1)
	require.Equal(t, driver.OutcomeFailure, settled[0].Outcome)
	require.Len(t, h.callbacksOf(g.ID, "on_failure", "on_complete", "on_success"), 2)
	settled, err = h.exec().GroupSettle(h.ctx, &driver.GroupSettleParams{Now: h.at(3 * time.Second), Limit: 10})
	require.NoError(t, err)
	require.Empty(t, settled)
}

func testGroupRetry[TTx any](h *harness[TTx], _ mode) {
	t := h.t
	a, b := h.newJob(), h.newJob()
	b.DependsOn, b.OnDependencyFailure = []string{a.ID}, driver.DependencyCancel
	g := h.group(driver.GroupWorkflow, "retried")
	h.insertGroup(g, a, b)
	h.endGroupJob(a, driver.StatusFailed)
	h.release(h.exec(), h.at(2*time.Second))
	require.Equal(t, driver.StatusCancelled, h.get(b.ID).Status, "the dependant is cancelled")
	_, err := h.exec().GroupSettle(h.ctx, &driver.GroupSettleParams{Now: h.at(3 * time.Second), Limit: 10})
	require.NoError(t, err)
	require.Equal(t, driver.OutcomeFailure, h.getGroup(g.ID).Outcome)

	rows, err := h.exec().GroupRetry(h.ctx, &driver.GroupRetryParams{ID: g.ID, Now: h.at(4 * time.Second), Retries: 3})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{a.ID, b.ID}, ids(rows))
	require.Equal(t, driver.StatusPending, h.get(a.ID).Status)
	rb := h.get(b.ID)
	require.Equal(t, driver.StatusPending, rb.Status)
	require.True(t, rb.Waiting, "the dependant waits again")
	require.True(t, h.getGroup(g.ID).SettledAt.IsZero(), "unsettled")
	_, err = h.exec().GroupRetry(h.ctx, &driver.GroupRetryParams{ID: newID(), Now: h.base})
	require.ErrorIs(t, err, driver.ErrNotFound)
}

func testGroupListClean[TTx any](h *harness[TTx], _ mode) {
	t := h.t
	var made []string
	for i := range 5 {
		g := h.group(driver.GroupBatch, "listed")
		if i == 4 {
			g.Kind, g.Name = driver.GroupWorkflow, "other"
		}
		g.CreatedAt = h.at(time.Duration(i) * time.Second)
		h.insertGroup(g, h.jobs(1, fmt.Sprintf("listed%d", i))...)
		made = append(made, g.ID)
	}
	page, err := h.exec().GroupList(h.ctx, &driver.GroupListParams{Kind: driver.GroupBatch, Name: "listed", Limit: 2})
	require.NoError(t, err)
	require.Equal(t, []string{made[3], made[2]}, []string{page[0].ID, page[1].ID}, "newest first")
	require.Equal(t, map[driver.JobStatus]int{driver.StatusPending: 1}, page[0].Counts)
	page, err = h.exec().GroupList(h.ctx, &driver.GroupListParams{Kind: driver.GroupBatch, Limit: 10, AfterID: made[2]})
	require.NoError(t, err)
	require.Equal(t, []string{made[1], made[0]}, []string{page[0].ID, page[1].ID})
	page, err = h.exec().GroupList(h.ctx, &driver.GroupListParams{Limit: 10})
	require.NoError(t, err)
	require.Len(t, page, 5)

	// Settled with no job left: cleaned.
	_, err = h.exec().JobCancel(h.ctx, &driver.JobActParams{Filter: driver.JobFilter{GroupIDs: []string{made[0]}}, Now: h.at(time.Second)})
	require.NoError(t, err)
	_, err = h.exec().GroupSettle(h.ctx, &driver.GroupSettleParams{Now: h.at(time.Second), Limit: 10})
	require.NoError(t, err)
	_, err = h.exec().JobDelete(h.ctx, &driver.JobActParams{Filter: driver.JobFilter{GroupIDs: []string{made[0]}}, Now: h.at(time.Second)})
	require.NoError(t, err)
	n, err := h.exec().GroupClean(h.ctx, &driver.GroupCleanParams{Before: h.at(time.Hour), Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = h.exec().GroupGet(h.ctx, &driver.GroupGetParams{ID: made[0]})
	require.ErrorIs(t, err, driver.ErrNotFound)
}

func testGroupReleaseSettleByGroup[TTx any](h *harness[TTx], _ mode) {
	t := h.t
	// Two workflows of a task and its dependant each, and a batch of one
	// job.
	chain := func(name string) (*driver.JobInsert, *driver.JobInsert, driver.GroupRow) {
		a, b := h.newJob(), h.newJob()
		a.Task, b.Task = "first", "second"
		b.DependsOn, b.OnDependencyFailure = []string{a.ID}, driver.DependencyCancel
		g := h.group(driver.GroupWorkflow, name)
		g.Callbacks = h.callbacks()
		h.insertGroup(g, a, b)
		return a, b, g
	}
	a1, b1, g1 := chain("one")
	a2, b2, g2 := chain("two")
	h.endGroupJob(a1, driver.StatusCompleted)
	h.endGroupJob(a2, driver.StatusFailed)
	batch := h.group(driver.GroupBatch, "swept")
	batch.Callbacks = h.callbacks()
	jobs := h.members(1)
	h.insertGroup(batch, jobs...)
	_, err := h.exec().JobCancel(h.ctx, &driver.JobActParams{IDs: []string{jobs[0].ID}, Now: h.at(time.Second)})
	require.NoError(t, err)

	release := func(groups ...string) []*driver.JobRow {
		t.Helper()
		rows, err := h.exec().JobRelease(h.ctx, &driver.JobReleaseParams{Now: h.at(2 * time.Second), Limit: 100, Groups: groups})
		require.NoError(t, err)
		return rows
	}
	require.Empty(t, release(newID(), "not-a-uuid"), "no such group")
	rows := release(g1.ID)
	require.Equal(t, []string{b1.ID}, ids(rows), "the first workflow's dependant alone")
	require.Equal(t, driver.StatusPending, rows[0].Status)
	require.False(t, rows[0].Waiting)
	require.True(t, h.get(b2.ID).Waiting, "the other workflow's dependant still waits")

	settle := func(among ...string) []*driver.GroupRow {
		t.Helper()
		settled, err := h.exec().GroupSettle(h.ctx, &driver.GroupSettleParams{Now: h.at(3 * time.Second), Limit: 10, IDs: among})
		require.NoError(t, err)
		return settled
	}
	require.Empty(t, settle(newID(), "not-a-uuid"), "no such group")
	require.Empty(t, settle(g2.ID), "the second workflow is not done: its dependant waits")

	rows = release(g2.ID, g1.ID)
	require.Equal(t, []string{b2.ID}, ids(rows), "the second workflow's dependant, cancelled")
	require.Equal(t, driver.StatusCancelled, rows[0].Status)
	settled := settle(g2.ID)
	require.Len(t, settled, 1)
	require.Equal(t, g2.ID, settled[0].ID)
	require.Equal(t, driver.OutcomeFailure, settled[0].Outcome)
	require.True(t, h.getGroup(batch.ID).SettledAt.IsZero(), "the batch was not named")
	settled = settle()
	require.Len(t, settled, 1, "a settle of every group takes the batch")
	require.Equal(t, batch.ID, settled[0].ID)
}
