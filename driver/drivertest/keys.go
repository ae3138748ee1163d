package drivertest

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func keyCases[TTx any]() []testCase[TTx] {
	return []testCase[TTx]{
		// A job's key and sequence are stored and read back; a filter by
		// keys selects its jobs; a sequence without a key is refused.
		{name: "Stored", twin: true, fn: testKeyStored[TTx]},
		// Limits read back as set, keys sorted; zero limits remove a
		// scope and its keys; a topic's own limits and its keys' are one
		// scope.
		{name: "Limits", twin: true, fn: testLimits[TTx]},
		// A sequence runs one job at a time in ID order, in every claim,
		// keyed or not; a job that fails for good holds the rest under
		// hold until it is requeued, and not under continue.
		{name: "Sequence", twin: true, fn: testSequence[TTx]},
		// Claimers running at once never run two jobs of one sequence.
		{name: "SequenceConcurrent", fn: testSequenceConcurrent[TTx]},
		// With a key's MaxRunning, claims leave at most that many of its
		// jobs processing, pass over it to other keys, and claim again as
		// they end; an override gives one key its own.
		{name: "KeyMaxRunning", twin: true, fn: testKeyMaxRunning[TTx]},
		// Claimers running at once never exceed a key's MaxRunning
		// together (fails without the scope's lock).
		{name: "KeyMaxRunningConcurrent", fn: testKeyMaxRunningConcurrent[TTx]},
		// A key's jobs behind many of a key at its limit are reached.
		{name: "KeyBehindLimited", fn: testKeyBehindLimited[TTx]},
		// With a rate per key, each key starts at most that many per
		// window.
		{name: "KeyRate", twin: true, fn: testKeyRate[TTx]},
		// A topic's own MaxRunning holds across queues; a key's limit in a
		// topic's scope counts the key's jobs of that topic only.
		{name: "TopicLimits", twin: true, fn: testTopicLimits[TTx]},
		// A fair queue's claims take keys round-robin, weighted, from
		// where the last claim stopped.
		{name: "Fair", twin: true, fn: testFair[TTx]},
		// KeyLoad counts a queue's keys; SequenceAhead names the job that
		// holds another.
		{name: "Inspect", fn: testKeyInspect[TTx]},
	}
}

// keyedClaim returns claimParams with Flow and Keyed set, as a client
// claims from a queue it has seen limits for.
func keyedClaim(now time.Time, topics ...string) *driver.JobClaimParams {
	p := flowClaim(now, topics...)
	p.Keyed = true
	return p
}

// seqIDs hands out job IDs in increasing order, for tests where ID order
// matters.
var seqIDs atomic.Int64

// keyed returns new jobs of topic, with the keys given in order and IDs in
// that order.
func (h *harness[TTx]) keyed(topic string, keys ...string) []*driver.JobInsert {
	jobs := make([]*driver.JobInsert, len(keys))
	for i, k := range keys {
		j := h.newJob()
		j.ID = fmt.Sprintf("0190f5d2-0000-7000-8000-%012d", seqIDs.Add(1))
		j.Topic, j.Key = topic, k
		jobs[i] = j
	}
	return jobs
}

// sequenced returns keyed jobs in the sequence of their keys under policy.
func (h *harness[TTx]) sequenced(policy driver.SequencePolicy, topic string, keys ...string) []*driver.JobInsert {
	jobs := h.keyed(topic, keys...)
	for _, j := range jobs {
		j.Sequence = policy
	}
	return jobs
}

func (h *harness[TTx]) setLimits(l driver.Limits) *driver.Limits {
	h.t.Helper()
	got, err := h.exec().LimitsSet(h.ctx, &driver.LimitsSetParams{Limits: l, Now: h.base})
	require.NoError(h.t, err, "LimitsSet")
	return got
}

// keyTally counts rows by key.
func keyTally(rows []*driver.JobRow) map[string]int {
	n := make(map[string]int)
	for _, r := range rows {
		n[r.Key]++
	}
	return n
}

// claimedKeys returns the keys of rows in order (claims return jobs in
// claim order: priority, run_at, ID).
func claimedKeys(rows []*driver.JobRow) []string {
	keys := make([]string, len(rows))
	for i, r := range rows {
		keys[i] = r.Key
	}
	return keys
}

func testKeyStored[TTx any](h *harness[TTx], m mode) {
	t := h.t
	jobs := h.keyed("stored", "acme", "", "globex")
	jobs[2].Sequence = driver.SequenceHold
	var res []driver.JobInsertResult
	h.via(m, func(ex driver.Executor) { res = h.insertVia(ex, jobs...) })
	for i, j := range jobs {
		requireRow(t, pendingRow(j), res[i].Job)
		h.requireStored(pendingRow(j))
	}
	require.Equal(t, "acme", h.get(jobs[0].ID).Key)
	require.Equal(t, driver.SequenceHold, h.get(jobs[2].ID).Sequence)
	list, err := h.exec().JobList(h.ctx, &driver.JobListParams{Filter: driver.JobFilter{Keys: []string{"acme", "globex"}}, Limit: 10})
	require.NoError(t, err)
	require.Equal(t, []string{jobs[0].ID, jobs[2].ID}, ids(list.Jobs))
	bad := h.keyed("stored", "")[0]
	bad.Sequence = driver.SequenceHold
	_, err = h.exec().JobInsertMany(h.ctx, &driver.JobInsertManyParams{Jobs: []*driver.JobInsert{bad}})
	require.Error(t, err, "a sequence without a key")
}

func testLimits[TTx any](h *harness[TTx], m mode) {
	t := h.t
	topic := driver.Limits{Scope: driver.Scope{Kind: driver.ScopeTopic, Name: "charge"}, MaxRunning: 5,
		KeyMaxRunning: 2, KeyRateLimit: 10, KeyRatePeriod: time.Minute, Sequence: driver.SequenceContinue,
		Keys: []driver.KeyLimit{{Key: "big", MaxRunning: 8, Weight: 3}, {Key: "acme", RateLimit: 1, RatePeriod: time.Second}}}
	queue := driver.Limits{Scope: driver.Scope{Kind: driver.ScopeQueue, Name: "default"}, Fair: true}
	var got *driver.Limits
	h.via(m, func(ex driver.Executor) {
		var err error
		got, err = ex.LimitsSet(h.ctx, &driver.LimitsSetParams{Limits: topic, Now: h.base})
		require.NoError(t, err)
	})
	want := topic
	want.Keys = []driver.KeyLimit{topic.Keys[1], topic.Keys[0]}
	want.UpdatedAt = h.base
	require.Equal(t, &want, got)
	h.setLimits(queue)
	all, err := h.exec().LimitsList(h.ctx, &driver.LimitsListParams{})
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.Equal(t, driver.ScopeQueue, all[0].Scope.Kind, "queues first")
	require.True(t, all[0].Fair)
	require.Equal(t, &want, all[1])
	// Zero limits remove the scope and its keys.
	h.setLimits(driver.Limits{Scope: topic.Scope})
	all, err = h.exec().LimitsList(h.ctx, &driver.LimitsListParams{})
	require.NoError(t, err)
	require.Len(t, all, 1)
	_, err = h.exec().LimitsSet(h.ctx, &driver.LimitsSetParams{Now: h.base, Limits: driver.Limits{
		Scope: driver.Scope{Kind: driver.ScopeTopic, Name: "a\x00b"}, MaxRunning: 1}})
	require.ErrorIs(t, err, driver.ErrTextNUL)
}

func testSequence[TTx any](h *harness[TTx], m mode) {
	t := h.t
	hold := h.sequenced(driver.SequenceHold, "seq", "a", "a", "a")
	cont := h.sequenced(driver.SequenceContinue, "seq", "b", "b")
	free := h.keyed("seq", "a") // same key, in no sequence
	h.insert(append(append(hold, cont...), free...)...)
	now := h.at(time.Second)
	rows := claimMode(h, m, claimParams(now, "seq"))
	require.ElementsMatch(t, []string{hold[0].ID, cont[0].ID, free[0].ID}, ids(rows), "the first of each sequence, and the free job")
	require.Empty(t, claimMode(h, m, keyedClaim(now, "seq")), "the sequences' next wait, keyed or not")
	require.Empty(t, claimMode(h, m, claimParams(now, "seq")))
	byID := map[string]*driver.JobRow{}
	for _, r := range rows {
		byID[r.ID] = r
	}
	h.finalize(ending(byID[hold[0].ID], driver.StatusCompleted, now), ending(byID[cont[0].ID], driver.StatusFailed, now))
	rows = claimMode(h, m, keyedClaim(now, "seq"))
	require.ElementsMatch(t, []string{hold[1].ID, cont[1].ID}, ids(rows), "the next of each; continue goes past a failed job")
	for _, r := range rows {
		byID[r.ID] = r
	}
	h.finalize(ending(byID[hold[1].ID], driver.StatusFailed, now))
	require.Empty(t, claimMode(h, m, claimParams(now, "seq")), "hold: a failed job holds the rest")
	require.Empty(t, claimMode(h, m, keyedClaim(now, "seq")))
	_, err := h.exec().JobRequeue(h.ctx, &driver.JobActParams{IDs: []string{hold[1].ID}, Now: now})
	require.NoError(t, err)
	rows = claimMode(h, m, keyedClaim(now, "seq"))
	require.Equal(t, []string{hold[1].ID}, ids(rows), "the requeued job runs first")
	h.finalize(ending(rows[0], driver.StatusCompleted, now))
	require.Equal(t, []string{hold[2].ID}, ids(claimMode(h, m, claimParams(now, "seq"))), "then the rest")
}

// claimAtOnce runs n claims at once, the params of claim i from params,
// and returns how many jobs of each key they claimed together.
func (h *harness[TTx]) claimAtOnce(n int, params func(i int) *driver.JobClaimParams) map[string]int {
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		perKey = map[string]int{}
	)
	for i := range n {
		wg.Go(func() {
			rows, err := h.exec().JobClaim(h.ctx, params(i))
			if err != nil {
				h.t.Error(err)
				return
			}
			mu.Lock()
			for _, r := range rows {
				perKey[r.Key]++
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	return perKey
}

func testSequenceConcurrent[TTx any](h *harness[TTx], _ mode) {
	t := h.t
	var keys []string
	for i := range 30 {
		keys = append(keys, fmt.Sprintf("k%d", i%3))
	}
	h.insert(h.sequenced(driver.SequenceHold, "seq", keys...)...)
	perKey := h.claimAtOnce(8, func(i int) *driver.JobClaimParams {
		p := claimParams(h.at(time.Second), "seq")
		p.Keyed = i%2 == 0
		p.Flow = p.Keyed
		return p
	})
	require.Equal(t, map[string]int{"k0": 1, "k1": 1, "k2": 1}, perKey, "one job of each sequence at once")
}

func testKeyMaxRunning[TTx any](h *harness[TTx], m mode) {
	t := h.t
	h.insert(h.keyed("lim", "a", "a", "a", "b", "b", "big", "big", "big", "")...)
	h.setLimits(driver.Limits{Scope: driver.Scope{Kind: driver.ScopeQueue, Name: "default"}, KeyMaxRunning: 1,
		Keys: []driver.KeyLimit{{Key: "big", MaxRunning: 2}}})
	now := h.at(time.Second)
	rows := claimMode(h, m, keyedClaim(now, "lim"))
	require.Equal(t, []string{"a", "b", "big", "big", ""}, claimedKeys(rows), "one of each key, two of big, and the job without a key")
	require.Empty(t, claimMode(h, m, keyedClaim(now, "lim")), "every key at its limit")
	h.finalize(ending(rows[0], driver.StatusCompleted, now))
	require.Equal(t, []string{"a"}, claimedKeys(claimMode(h, m, keyedClaim(now, "lim"))), "a again once one ended")
}

func testKeyMaxRunningConcurrent[TTx any](h *harness[TTx], _ mode) {
	t := h.t
	// Each claimer works one topic of four, as clients with different
	// workers do, so that each sees other jobs of the same keys: only the
	// scope's lock keeps them from each taking the last free slot.
	var jobs []*driver.JobInsert
	for i := range 64 {
		j := h.keyed(fmt.Sprintf("t%d", i%4), fmt.Sprintf("k%d", i/4%4))[0]
		jobs = append(jobs, j)
	}
	h.insert(jobs...)
	h.setLimits(driver.Limits{Scope: driver.Scope{Kind: driver.ScopeQueue, Name: "default"}, KeyMaxRunning: 2})
	perKey := h.claimAtOnce(16, func(i int) *driver.JobClaimParams {
		p := keyedClaim(h.at(time.Second), fmt.Sprintf("t%d", i%4))
		p.Limit = 3
		return p
	})
	require.Equal(t, map[string]int{"k0": 2, "k1": 2, "k2": 2, "k3": 2}, perKey, "jobs of each key claimed by claimers at once")
}

func testKeyBehindLimited[TTx any](h *harness[TTx], _ mode) {
	t := h.t
	keys := slices.Repeat([]string{"huge"}, 300)
	h.insert(h.keyed("lim", append(keys, "small", "small")...)...)
	h.setLimits(driver.Limits{Scope: driver.Scope{Kind: driver.ScopeQueue, Name: "default"}, KeyMaxRunning: 1})
	p := keyedClaim(h.at(time.Second), "lim")
	p.Limit = 10
	require.Equal(t, []string{"huge", "small"}, claimedKeys(h.claimVia(h.exec(), p)))
}

func testKeyRate[TTx any](h *harness[TTx], m mode) {
	t := h.t
	h.insert(h.keyed("rated", "a", "a", "a", "a", "b", "b", "b")...)
	h.setLimits(driver.Limits{Scope: driver.Scope{Kind: driver.ScopeTopic, Name: "rated"}, KeyRateLimit: 2, KeyRatePeriod: time.Minute,
		Keys: []driver.KeyLimit{{Key: "b", RateLimit: 1, RatePeriod: time.Minute}}})
	rows := claimMode(h, m, keyedClaim(h.at(time.Second), "rated"))
	require.Equal(t, []string{"a", "a", "b"}, claimedKeys(rows), "two of a, one of b")
	use, err := h.exec().KeyUse(h.ctx, &driver.KeyUseParams{Scope: driver.Scope{Kind: driver.ScopeTopic, Name: "rated"}, Key: "a"})
	require.NoError(t, err)
	require.Equal(t, &driver.KeyUse{Running: 2, WindowStart: h.at(time.Second), WindowCount: 2}, use)
	require.Empty(t, claimMode(h, m, keyedClaim(h.at(30*time.Second), "rated")), "windows used up")
	require.Equal(t, []string{"a", "a", "b"}, claimedKeys(claimMode(h, m, keyedClaim(h.at(62*time.Second), "rated"))), "next windows")
}

func testTopicLimits[TTx any](h *harness[TTx], m mode) {
	t := h.t
	jobs := h.keyed("capped", "x", "x", "y", "y")
	jobs[2].Queue, jobs[3].Queue = "other", "other"
	h.insert(jobs...)
	h.setLimits(driver.Limits{Scope: driver.Scope{Kind: driver.ScopeTopic, Name: "capped"}, MaxRunning: 3, KeyMaxRunning: 1})
	now := h.at(time.Second)
	require.Equal(t, []string{"x"}, claimedKeys(claimMode(h, m, keyedClaim(now, "capped"))), "one per key")
	other := keyedClaim(now, "capped")
	other.Queue = "other"
	require.Equal(t, []string{"y"}, claimedKeys(claimMode(h, m, other)), "the key limit is the topic's")
	h.setLimits(driver.Limits{Scope: driver.Scope{Kind: driver.ScopeTopic, Name: "capped"}, MaxRunning: 3})
	require.Len(t, claimMode(h, m, keyedClaim(now, "capped")), 1, "the topic's own limit: 3 across queues")
	require.Empty(t, claimMode(h, m, other))
}

func testFair[TTx any](h *harness[TTx], m mode) {
	t := h.t
	keys := slices.Repeat([]string{"a"}, 50)
	keys = append(keys, "b", "b", "b", "c", "c", "c", "c", "c", "c")
	h.insert(h.keyed("fair", keys...)...)
	h.setLimits(driver.Limits{Scope: driver.Scope{Kind: driver.ScopeQueue, Name: "default"}, Fair: true,
		Keys: []driver.KeyLimit{{Key: "c", Weight: 2}}})
	p := keyedClaim(h.at(time.Second), "fair")
	p.Limit = 4
	require.Equal(t, []string{"a", "b", "c", "c"}, claimedKeys(claimMode(h, m, p)), "one round")
	require.Equal(t, []string{"a", "b", "c", "c"}, claimedKeys(claimMode(h, m, p)), "the next round, from after c")
	p.Limit = 10
	require.Equal(t, map[string]int{"a": 7, "b": 1, "c": 2}, keyTally(claimMode(h, m, p)), "b's last, c's last two, a the rest")
}

func testKeyInspect[TTx any](h *harness[TTx], _ mode) {
	t := h.t
	jobs := h.sequenced(driver.SequenceHold, "seq", "a", "a", "b")
	h.insert(jobs...)
	rows := h.claimVia(h.exec(), claimParams(h.at(time.Second), "seq"))
	require.Len(t, rows, 2)
	counts, err := h.exec().KeyLoad(h.ctx, &driver.KeyLoadParams{Queue: "default", Limit: 10})
	require.NoError(t, err)
	require.Equal(t, []*driver.KeyCount{{Key: "a", Pending: 1, Processing: 1}, {Key: "b", Processing: 1}}, counts)
	ahead, err := h.exec().SequenceAhead(h.ctx, &driver.SequenceAheadParams{ID: jobs[1].ID})
	require.NoError(t, err)
	require.Equal(t, jobs[0].ID, ahead.ID)
	ahead, err = h.exec().SequenceAhead(h.ctx, &driver.SequenceAheadParams{ID: jobs[0].ID})
	require.NoError(t, err)
	require.Nil(t, ahead)
	_, err = h.exec().SequenceAhead(h.ctx, &driver.SequenceAheadParams{ID: newID()})
	require.ErrorIs(t, err, driver.ErrNotFound)
	other := h.sequenced(driver.SequenceContinue, "seq", "c")[0]
	other.Queue = "other"
	h.insert(other, h.keyed("seq", "d")[0])
	queues, err := h.exec().SequencedQueues(h.ctx, &driver.SequencedQueuesParams{})
	require.NoError(t, err)
	require.Equal(t, []string{"default", "other"}, queues)
}
