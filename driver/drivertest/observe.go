package drivertest

import (
	"encoding/json"
	"log/slog"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func observeCases[TTx any]() []testCase[TTx] {
	return []testCase[TTx]{
		// Tags and metadata are stored as given, by every kind of insert
		// (one job, a batch, a unique job), and jobs without them have
		// none.
		{name: "TagsMetadataStored", twin: true, fn: testTagsMetadataStored[TTx]},
		// A list selects by tags (every one, or any with AnyTag) and by
		// metadata string values, with Total counting the selection; a
		// deleted job is no longer found by its tags.
		{name: "TagsMetadataFilter", twin: true, fn: testTagsMetadataFilter[TTx]},
		// JobProgress sets logs, with or without the progress, fenced by
		// the claim; KeepProgress keeps the progress.
		{name: "LogsByProgress", twin: true, fn: testLogsByProgress[TTx]},
		// A finalization sets the logs it carries, in a batch of plain
		// completions and in a retry alike; the next claim keeps them.
		{name: "LogsByFinalize", twin: true, fn: testLogsByFinalize[TTx]},
		// Log records that break the text rule are stored cleaned.
		{name: "LogsCleaned", twin: true, fn: testLogsCleaned[TTx]},
		// The jobs an item inserts are inserted if and only if it matched,
		// and counted.
		{name: "FinalizeInsert", twin: true, fn: testFinalizeInsert[TTx]},
		// A rollback discards an outcome and the jobs it inserted.
		{name: "FinalizeInsertRollback", fn: testFinalizeInsertRollback[TTx]},
	}
}

// tagged returns a new job with tags and metadata.
func (h *harness[TTx]) tagged(tags []string, meta string) *driver.JobInsert {
	j := h.newJob()
	j.Tags = tags
	if meta != "" {
		j.Metadata = []byte(meta)
	}
	return j
}

func testTagsMetadataStored[TTx any](h *harness[TTx], m mode) {
	one := h.tagged([]string{"a", "b \u2713"}, `{"tenant": "acme", "n": 1, "nested": {"x": [1, 2]}}`)
	batch := []*driver.JobInsert{h.newJob(), h.tagged([]string{"c"}, ""), h.tagged(nil, `{"k": "v"}`), h.newJob()}
	for range 200 { // enough for COPY on Postgres
		batch = append(batch, h.tagged([]string{"bulk"}, `{"bulk": true}`))
	}
	unique := h.tagged([]string{"u"}, `{"u": "1"}`)
	unique.UniqueKey = "key-" + unique.ID
	var res []driver.JobInsertResult
	h.via(m, func(ex driver.Executor) {
		res = append(res, h.insertVia(ex, one)...)
		res = append(res, h.insertVia(ex, batch...)...)
		res = append(res, h.insertVia(ex, unique)...)
	})
	all := append(append([]*driver.JobInsert{one}, batch...), unique)
	for i, j := range all {
		want := pendingRow(j)
		requireRow(h.t, want, res[i].Job)
		h.requireStored(want)
	}
	h.requireCountsAgree(h.exec(), "after tagged inserts")
}

func testTagsMetadataFilter[TTx any](h *harness[TTx], m mode) {
	ab := h.insert(h.tagged([]string{"a", "b"}, `{"tenant": "acme", "n": "1"}`))[0]
	a := h.insert(h.tagged([]string{"a"}, `{"tenant": "globex", "n": 1}`))[0]
	c := h.insert(h.tagged([]string{"c", "a"}, `{"tenant": "acme"}`))[0]
	plain := h.insert(h.newJob())[0]
	cases := []struct {
		f    driver.JobFilter
		want []*driver.JobRow
	}{
		{driver.JobFilter{Tags: []string{"a"}}, []*driver.JobRow{ab, a, c}},
		{driver.JobFilter{Tags: []string{"a", "b"}}, []*driver.JobRow{ab}},
		{driver.JobFilter{Tags: []string{"a", "a", "b"}}, []*driver.JobRow{ab}},
		{driver.JobFilter{Tags: []string{"b", "c"}, AnyTag: true}, []*driver.JobRow{ab, c}},
		{driver.JobFilter{Tags: []string{"nope"}}, nil},
		{driver.JobFilter{Metadata: map[string]string{"tenant": "acme"}}, []*driver.JobRow{ab, c}},
		// A number is not the string of its digits.
		{driver.JobFilter{Metadata: map[string]string{"n": "1"}}, []*driver.JobRow{ab}},
		{driver.JobFilter{Metadata: map[string]string{"tenant": "acme", "n": "1"}, Tags: []string{"b"}},
			[]*driver.JobRow{ab}},
		{driver.JobFilter{Metadata: map[string]string{"tenant": "initech"}}, nil},
	}
	for i, tc := range cases {
		var got *driver.JobListResult
		h.via(m, func(ex driver.Executor) {
			got = h.listVia(ex, &driver.JobListParams{Filter: tc.f, Limit: 10})
		})
		want := sortedRowIDs(tc.want)
		require.Equal(h.t, want, ids(got.Jobs), "filter %d: %+v", i, tc.f)
		require.Equal(h.t, len(want), got.Total, "filter %d: total", i)
	}
	_ = plain
	deleted, err := h.exec().JobDelete(h.ctx, &driver.JobActParams{IDs: []string{ab.ID}, Now: h.at(time.Second)})
	require.NoError(h.t, err, "JobDelete")
	require.Len(h.t, deleted, 1)
	got := h.listVia(h.exec(), &driver.JobListParams{Filter: driver.JobFilter{Tags: []string{"b"}}, Limit: 10})
	require.Empty(h.t, got.Jobs, "a deleted job is not found by its tags")
}

// sortedRowIDs returns the IDs of rows in ascending order.
func sortedRowIDs(rows []*driver.JobRow) []string {
	out := ids(rows)
	for i := range out {
		for k := i + 1; k < len(out); k++ {
			if out[k] < out[i] {
				out[i], out[k] = out[k], out[i]
			}
		}
	}
	return out
}

// logs returns logs of n records logged by attempt at at, and dropped.
func (h *harness[TTx]) logs(n, attempt, dropped int, at time.Time) *driver.JobLogs {
	l := &driver.JobLogs{Dropped: dropped}
	for i := range n {
		l.Records = append(l.Records, driver.LogRecord{
			Attempt: attempt, Level: slog.LevelWarn + slog.Level(i), Time: at.Add(time.Duration(i) * time.Microsecond),
			Message: "step \u2713", Attrs: json.RawMessage(`{"i": ` + string(rune('0'+i%10)) + `, "g": {"k": "v"}}`),
		})
	}
	if n == 1 {
		l.Records[0].Attrs = nil
	}
	return l
}

// withLogs returns a copy of row with logs stored.
func withLogs(row *driver.JobRow, l *driver.JobLogs) *driver.JobRow {
	w := cloneRow(row)
	w.Logs, w.LogsDropped = l.Records, l.Dropped
	return w
}

func testLogsByProgress[TTx any](h *harness[TTx], m mode) {
	row := h.started(client1, nil)
	first := progressing(row, 10, "ten", h.at(time.Second))
	first.Logs = h.logs(3, 1, 0, h.at(time.Second))
	require.Equal(h.t, []bool{true}, progressMode(h, m, first))
	h.requireStored(withLogs(withProgress(row, first), first.Logs))

	only := progressing(row, 99, "ignored", h.at(2*time.Second))
	only.KeepProgress = true
	only.Logs = h.logs(1, 1, 4, h.at(2*time.Second))
	fenced := progressing(row, 1, "other client", h.at(2*time.Second))
	fenced.LockedBy, fenced.Logs = client2, h.logs(2, 1, 0, h.at(2*time.Second))
	require.Equal(h.t, []bool{true, false}, progressMode(h, m, only, fenced))
	h.requireStored(withLogs(withProgress(row, first), only.Logs))

	// Progress alone leaves the logs.
	third := progressing(row, 50, "fifty", h.at(3*time.Second))
	require.Equal(h.t, []bool{true}, progressMode(h, m, third))
	h.requireStored(withLogs(withProgress(row, third), only.Logs))
}

func testLogsByFinalize[TTx any](h *harness[TTx], m mode) {
	plainDone := h.started(client1, nil)
	logged := h.started(client1, nil)
	retried := h.started(client1, nil)
	at := h.at(time.Second)
	done := ending(logged, driver.StatusCompleted, at)
	done.Logs = h.logs(2, 1, 0, at)
	retry := retrying(retried, h.at(time.Minute), &driver.AttemptError{Attempt: 1, At: at, Error: "boom"})
	retry.Logs = h.logs(3, 1, 7, at)
	// A job whose logs a progress write stored, completed without more
	// after completions with logs: it keeps them.
	kept := h.started(client1, nil)
	keptLogs := progressing(kept, 1, "", at)
	keptLogs.KeepProgress, keptLogs.Logs = true, h.logs(2, 1, 0, at)
	require.Equal(h.t, []bool{true}, progressMode(h, m, keptLogs))
	require.Equal(h.t, []bool{true, true, true, true},
		finalizeMode(h, m, ending(plainDone, driver.StatusCompleted, at), done, retry, ending(kept, driver.StatusCompleted, at)))

	want := unlocked(plainDone, driver.StatusCompleted)
	want.FinalizedAt = at
	h.requireStored(want)
	want = withLogs(unlocked(logged, driver.StatusCompleted), done.Logs)
	want.FinalizedAt = at
	h.requireStored(want)
	want = withLogs(unlocked(kept, driver.StatusCompleted), keptLogs.Logs)
	want.FinalizedAt = at
	h.requireStored(want)
	want = withLogs(unlocked(retried, driver.StatusPending), retry.Logs)
	want.RunAt, want.Errors = h.at(time.Minute), []driver.AttemptError{*retry.Error}
	h.requireStored(want)
	again := h.claimJob(want, client2, h.at(time.Minute), h.at(2*time.Minute))
	requireRow(h.t, claimedRow(want, client2, h.at(time.Minute), h.at(2*time.Minute)), again)
}

func testLogsCleaned[TTx any](h *harness[TTx], m mode) {
	row := h.started(client1, nil)
	at := h.at(time.Second)
	u := progressing(row, 1, "", at)
	u.KeepProgress = true
	u.Logs = &driver.JobLogs{Records: []driver.LogRecord{{
		Attempt: 1, Level: slog.LevelInfo, Time: at, Message: "nul \x00 and bad \xff",
		Attrs: json.RawMessage(`{"k": "a\u0000b", "e": "\\u0000"}`),
	}}}
	require.Equal(h.t, []bool{true}, progressMode(h, m, u))
	got := h.get(row.ID)
	require.Len(h.t, got.Logs, 1)
	require.Equal(h.t, "nul \uFFFD and bad \uFFFD", got.Logs[0].Message)
	require.JSONEq(h.t, `{"k": "a\ufffdb", "e": "\\u0000"}`, string(got.Logs[0].Attrs))
}

// notices returns n new jobs of topic "notice" for the outcome of row.
func (h *harness[TTx]) notices(n int) []*driver.JobInsert {
	out := h.jobs(n, "notice")
	for _, j := range out {
		j.Queue = "notices"
	}
	return out
}

func testFinalizeInsert[TTx any](h *harness[TTx], m mode) {
	done := h.started(client1, nil)
	failed := h.started(client1, nil)
	lost := h.started(client1, nil)
	at := h.at(time.Second)
	a, b, c := ending(done, driver.StatusCompleted, at), ending(failed, driver.StatusFailed, at),
		ending(lost, driver.StatusCompleted, at)
	a.Insert, b.Insert, c.Insert = h.notices(2), h.notices(1), h.notices(1)
	c.LockedBy = client2 // does not match: its job is not inserted
	plain := h.started(client1, nil)
	require.Equal(h.t, []bool{true, true, false, true},
		finalizeMode(h, m, a, b, c, ending(plain, driver.StatusCompleted, at)))
	for _, j := range append(a.Insert, b.Insert...) {
		h.requireStored(pendingRow(j))
	}
	h.requireNotFound(c.Insert[0].ID)
	want := unlocked(done, driver.StatusCompleted)
	want.FinalizedAt = at
	h.requireStored(want)
	got := h.listVia(h.exec(), &driver.JobListParams{Filter: driver.JobFilter{Queues: []string{"notices"}}, Limit: 10})
	require.Equal(h.t, 3, got.Total)
	h.requireCountsAgree(h.exec(), "after a finalization that inserts")
	// The inserted jobs are claimable.
	claimed := h.claimVia(h.exec(), &driver.JobClaimParams{ClientID: client1, Queue: "notices",
		Topics: []string{"notice"}, Limit: 10, Now: h.at(time.Hour), LockedUntil: h.at(2 * time.Hour)})
	require.Len(h.t, claimed, 3)
}

func testFinalizeInsertRollback[TTx any](h *harness[TTx], _ mode) {
	row := h.started(client1, nil)
	item := ending(row, driver.StatusCancelled, h.at(time.Second))
	item.Insert = h.notices(1)
	h.inTx(false, func(ex driver.Executor) {
		require.Equal(h.t, []bool{true}, h.finalizeVia(ex, item))
	})
	h.requireStored(row)
	h.requireNotFound(item.Insert[0].ID)
	h.requireCountsAgree(h.exec(), "after a rolled back finalization that inserts")
}
