package sluice_test

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
)

// orderArgs are the args of a job for one customer's order.
type orderArgs struct {
	Customer string `json:"customer"`
	N        int    `json:"n"`
}

func (orderArgs) Topic() string { return "order" }

// JobKey makes the customer the job's key.
func (a orderArgs) JobKey() string { return a.Customer }

func TestKeysRefuseBadInputAndWriteNothing(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testKeysRefuseBadInput[*sql.Tx], testKeysRefuseBadInput[pgx.Tx])
}

func testKeysRefuseBadInput[TTx any](t *testing.T, k *kit[TTx]) {
	c := k.client(t, nil)
	ctx := t.Context()
	for _, tc := range []struct {
		name string
		opts *sluice.EnqueueOptions
		args sluice.JobArgs
	}{
		{"a key over the limit", &sluice.EnqueueOptions{Key: strings.Repeat("k", sluice.MaxKeyBytes+1)}, noteArgs{}},
		{"a key with NUL", &sluice.EnqueueOptions{Key: "a\x00b"}, noteArgs{}},
		{"a key that is not UTF-8", &sluice.EnqueueOptions{Key: "q\xff"}, noteArgs{}},
		{"a key the args give that is not UTF-8", nil, orderArgs{Customer: "q\xfe"}},
		{"a sequence without a key", &sluice.EnqueueOptions{Sequence: sluice.SequenceHold}, noteArgs{}},
		{"an unknown sequence policy", &sluice.EnqueueOptions{Key: "k", Sequence: "later"}, noteArgs{}},
	} {
		_, err := c.Enqueue(ctx, tc.args, tc.opts)
		require.ErrorIs(t, err, sluice.ErrInvalidOptions, tc.name)
	}
	require.Zero(t, k.count(t), "no job was stored")

	for _, tc := range []struct {
		name  string
		scope sluice.Scope
		l     sluice.KeyLimits
		field string
	}{
		{"a negative limit", sluice.QueueScope("q"), sluice.KeyLimits{MaxRunning: -1}, "MaxRunning"},
		{"a rate without a period", sluice.QueueScope("q"), sluice.KeyLimits{RateLimit: 10}, "RatePeriod"},
		{"a period without a rate", sluice.QueueScope("q"), sluice.KeyLimits{RatePeriod: time.Minute}, "RatePeriod"},
		{"a zero period of a key's rate", sluice.QueueScope("q"), sluice.KeyLimits{Keys: map[string]sluice.KeyLimit{"a": {RateLimit: 1}}},
			`Keys["a"].RatePeriod`},
		{"an empty key", sluice.QueueScope("q"), sluice.KeyLimits{Keys: map[string]sluice.KeyLimit{"": {MaxRunning: 1}}}, `Keys[""]`},
		{"a key with NUL", sluice.TopicScope("t"), sluice.KeyLimits{Keys: map[string]sluice.KeyLimit{"a\x00": {MaxRunning: 1}}}, `Keys["a\x00"]`},
		{"a weight over the limit", sluice.QueueScope("q"), sluice.KeyLimits{Keys: map[string]sluice.KeyLimit{"a": {Weight: sluice.MaxWeight + 1}}},
			`Keys["a"].Weight`},
		{"fair sharing of a topic", sluice.TopicScope("t"), sluice.KeyLimits{Fair: true}, "Fair"},
		{"an unknown sequence policy", sluice.QueueScope("q"), sluice.KeyLimits{Sequence: "later"}, "Sequence"},
		{"a bad queue name", sluice.QueueScope("a b"), sluice.KeyLimits{MaxRunning: 1}, "Scope"},
		{"an empty topic", sluice.TopicScope(""), sluice.KeyLimits{MaxRunning: 1}, "Scope"},
		{"an unknown kind of scope", sluice.Scope{Kind: "tenant", Name: "x"}, sluice.KeyLimits{MaxRunning: 1}, "Scope"},
	} {
		_, err := c.SetKeyLimits(ctx, tc.scope, tc.l)
		var oe *sluice.OptionsError
		require.ErrorAs(t, err, &oe, tc.name)
		require.Equal(t, tc.field, oe.Field, tc.name)
	}
	_, err := c.SetTopicLimits(ctx, "t", sluice.TopicLimits{RateLimit: 5})
	require.ErrorIs(t, err, sluice.ErrInvalidOptions)
	all, err := c.StoredLimits(ctx)
	require.NoError(t, err)
	require.Empty(t, all, "no limits were stored")
}

func TestKeysAndSequencesAreStored(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testKeysAndSequencesAreStored[*sql.Tx], testKeysAndSequencesAreStored[pgx.Tx])
}

func testKeysAndSequencesAreStored[TTx any](t *testing.T, k *kit[TTx]) {
	ctx := t.Context()
	c := k.client(t, nil)
	res, err := c.Enqueue(ctx, orderArgs{Customer: "acme"}, nil)
	require.NoError(t, err)
	require.Equal(t, "acme", res.Job.Key, "the key the args give")
	require.Empty(t, res.Job.Sequence)
	res, err = c.Enqueue(ctx, orderArgs{Customer: "acme"}, &sluice.EnqueueOptions{Key: "globex"})
	require.NoError(t, err)
	require.Equal(t, "globex", res.Job.Key, "the options' key comes first")

	// A topic's stored sequence policy applies to its keyed jobs enqueued
	// after it, which need no option of their own.
	_, err = c.SetKeyLimits(ctx, sluice.TopicScope("order"), sluice.KeyLimits{Sequence: sluice.SequenceHold})
	require.NoError(t, err)
	res, err = c.Enqueue(ctx, orderArgs{Customer: "acme"}, nil)
	require.NoError(t, err)
	require.Equal(t, sluice.SequenceHold, res.Job.Sequence)
	res, err = c.Enqueue(ctx, orderArgs{Customer: "acme"}, &sluice.EnqueueOptions{Sequence: sluice.SequenceContinue})
	require.NoError(t, err)
	require.Equal(t, sluice.SequenceContinue, res.Job.Sequence, "the job's own policy comes first")
	res, err = c.Enqueue(ctx, noteArgs{}, nil)
	require.NoError(t, err)
	require.Empty(t, res.Job.Sequence, "no key, no sequence")

	list, err := c.List(ctx, &sluice.ListFilter{JobFilter: sluice.JobFilter{Keys: []string{"globex"}}})
	require.NoError(t, err)
	require.Equal(t, 1, list.Total)
	got, err := c.Get(ctx, list.Jobs[0].ID)
	require.NoError(t, err)
	require.Equal(t, "globex", got.Key)

	// Limits read back; SetTopicLimits keeps the key limits, and the
	// other way round.
	_, err = c.SetTopicLimits(ctx, "order", sluice.TopicLimits{MaxRunning: 4})
	require.NoError(t, err)
	l, err := c.SetKeyLimits(ctx, sluice.TopicScope("order"), sluice.KeyLimits{MaxRunning: 1, Sequence: sluice.SequenceHold,
		Keys: map[string]sluice.KeyLimit{"big": {MaxRunning: 3}}})
	require.NoError(t, err)
	require.Equal(t, 4, l.MaxRunning)
	require.Equal(t, 1, l.KeyMaxRunning)
	require.Equal(t, "big", l.Keys[0].Key)
	_, err = c.SetKeyLimits(ctx, sluice.TopicScope("order"), sluice.KeyLimits{})
	require.NoError(t, err)
	all, err := c.StoredLimits(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1)
	require.Equal(t, 4, all[0].MaxRunning, "the topic's own limit stays")
	require.Zero(t, all[0].KeyMaxRunning)
}

func TestKeyLimitsHoldAcrossClients(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testKeyLimitsHoldAcrossClients[*sql.Tx], testKeyLimitsHoldAcrossClients[pgx.Tx])
}

// running tracks the jobs of each key running at once, and the order each
// sequence ran in.
type running struct {
	mu      sync.Mutex
	now     map[string]int
	most    map[string]int
	order   map[string][]int
	overlap int
}

func (r *running) work(ctx context.Context, job *sluice.Job[orderArgs]) error {
	r.mu.Lock()
	r.now[job.Key]++
	r.most[job.Key] = max(r.most[job.Key], r.now[job.Key])
	r.order[job.Key] = append(r.order[job.Key], job.Args.N)
	r.mu.Unlock()
	select {
	case <-time.After(5 * time.Millisecond):
	case <-ctx.Done():
	}
	r.mu.Lock()
	r.now[job.Key]--
	r.mu.Unlock()
	return nil
}

func testKeyLimitsHoldAcrossClients[TTx any](t *testing.T, k *kit[TTx]) {
	ctx := t.Context()
	r := &running{now: map[string]int{}, most: map[string]int{}, order: map[string][]int{}}
	queues := map[string]sluice.QueueConfig{sluice.QueueDefault: {MaxWorkers: 8}, "seq": {MaxWorkers: 8}}
	enq := k.client(t, &sluice.Config{Queues: queues})
	_, err := enq.SetKeyLimits(ctx, sluice.QueueScope(sluice.QueueDefault), sluice.KeyLimits{MaxRunning: 2,
		Keys: map[string]sluice.KeyLimit{"vip": {MaxRunning: 3}}})
	require.NoError(t, err)
	var params []sluice.EnqueueParams
	for n := range 60 {
		customer := []string{"a", "b", "vip"}[n%3]
		params = append(params, sluice.EnqueueParams{Args: orderArgs{Customer: customer, N: n}})
		// The sequences of another queue's keys.
		params = append(params, sluice.EnqueueParams{Args: orderArgs{Customer: "s" + customer, N: n},
			Options: &sluice.EnqueueOptions{Queue: "seq", Sequence: sluice.SequenceHold}})
	}
	_, err = enq.EnqueueMany(ctx, params)
	require.NoError(t, err)
	var clients []*sluice.Client[TTx]
	for range 3 {
		w := sluice.NewWorkers()
		sluice.AddWorker(w, sluice.WorkFunc(r.work))
		clients = append(clients, k.client(t, &sluice.Config{Workers: w, Queues: queues, PollInterval: 20 * time.Millisecond}))
	}
	require.Eventually(t, func() bool {
		res, err := enq.List(ctx, &sluice.ListFilter{JobFilter: sluice.JobFilter{Statuses: []sluice.JobStatus{sluice.StatusCompleted}}, Limit: 1})
		return err == nil && res.Total == len(params)
	}, 60*time.Second, 20*time.Millisecond)
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Equal(t, map[string]int{"a": 2, "b": 2, "vip": 3}, map[string]int{"a": r.most["a"], "b": r.most["b"], "vip": r.most["vip"]},
		"the most jobs of each key at once, across %d clients", len(clients))
	for _, key := range []string{"sa", "sb", "svip"} {
		require.Equal(t, 1, r.most[key], "one job of sequence %s at a time", key)
		require.IsIncreasing(t, r.order[key], "sequence %s in enqueue order", key)
		require.Len(t, r.order[key], 20)
	}
}

func TestExplainNamesWhatHoldsAKey(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testExplainNamesWhatHoldsAKey[*sql.Tx], testExplainNamesWhatHoldsAKey[pgx.Tx])
}

func testExplainNamesWhatHoldsAKey[TTx any](t *testing.T, k *kit[TTx]) {
	ctx := t.Context()
	c := k.client(t, &sluice.Config{Queues: map[string]sluice.QueueConfig{sluice.QueueDefault: {}, "seq": {}, "fair": {}}})
	enqueue := func(customer string, opts *sluice.EnqueueOptions) string {
		t.Helper()
		res, err := c.Enqueue(ctx, orderArgs{Customer: customer}, opts)
		require.NoError(t, err)
		return res.Job.ID
	}
	explain := func(id string) *sluice.Explanation {
		t.Helper()
		ex, err := c.Explain(ctx, id)
		require.NoError(t, err)
		return ex
	}

	// A sequence: the second job waits for the first, which failed for
	// good and holds it.
	first := enqueue("acme", &sluice.EnqueueOptions{Sequence: sluice.SequenceHold, Queue: "seq"})
	second := enqueue("acme", &sluice.EnqueueOptions{Sequence: sluice.SequenceHold, Queue: "seq"})
	ex := explain(second)
	require.Equal(t, sluice.ReasonSequence, ex.Reason, ex.Text)
	require.Equal(t, first, ex.Ahead)
	require.Equal(t, "acme", ex.Key)
	k.run(t, `UPDATE sluice_jobs SET status = 'failed', finalized_at = ? WHERE id = ?`, time.Now(), first)
	ex = explain(second)
	require.Equal(t, sluice.ReasonSequence, ex.Reason)
	require.Contains(t, ex.Text, "holds the sequence")
	// Cancelling the failed job lets the rest go on.
	_, err := c.Cancel(ctx, first)
	require.NoError(t, err)
	require.NotEqual(t, sluice.ReasonSequence, explain(second).Reason)

	// A key at its limit, and one out of its rate: a keyed claim, as a
	// client makes, starts one of each.
	_, err = c.SetKeyLimits(ctx, sluice.QueueScope(sluice.QueueDefault), sluice.KeyLimits{MaxRunning: 1,
		Keys: map[string]sluice.KeyLimit{"rated": {MaxRunning: 5, RateLimit: 1, RatePeriod: time.Hour}}})
	require.NoError(t, err)
	enqueue("busy", nil)
	enqueue("rated", nil)
	now := time.Now()
	claimed, err := k.exec.JobClaim(ctx, &driver.JobClaimParams{ClientID: "elsewhere", Queue: sluice.QueueDefault,
		Topics: []string{"order"}, Limit: 10, Now: now, LockedUntil: now.Add(time.Hour), Flow: true, Keyed: true})
	require.NoError(t, err)
	require.Len(t, claimed, 2)
	ex = explain(enqueue("busy", nil))
	require.Equal(t, sluice.ReasonKeyLimit, ex.Reason, ex.Text)
	require.Equal(t, "busy", ex.Key)
	ex = explain(enqueue("rated", nil))
	require.Equal(t, sluice.ReasonKeyRate, ex.Reason, ex.Text)
	require.Equal(t, "rated", ex.Key)

	// A fair queue: a job of a key takes its turn with the others.
	_, err = c.SetKeyLimits(ctx, sluice.QueueScope("fair"), sluice.KeyLimits{Fair: true})
	require.NoError(t, err)
	enqueue("tenant-a", &sluice.EnqueueOptions{Queue: "fair"})
	ex = explain(enqueue("tenant-b", &sluice.EnqueueOptions{Queue: "fair"}))
	require.Equal(t, sluice.ReasonFairShare, ex.Reason, ex.Text)
	require.Contains(t, ex.Text, "1 other key")
}

func TestASequencesNextJobStartsWithoutWaitingForThePoll(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testSequenceNextWithoutPoll[*sql.Tx], testSequenceNextWithoutPoll[pgx.Tx])
}

// testSequenceNextWithoutPoll works a sequence of five jobs with a poll
// interval of ten minutes: each job's end wakes the claim of the next, so
// the five finish long before a poll could have found the second.
func testSequenceNextWithoutPoll[TTx any](t *testing.T, k *kit[TTx]) {
	ctx := t.Context()
	r := &running{now: map[string]int{}, most: map[string]int{}, order: map[string][]int{}}
	w := sluice.NewWorkers()
	sluice.AddWorker(w, sluice.WorkFunc(r.work))
	c := k.client(t, &sluice.Config{Workers: w, PollInterval: 10 * time.Minute})
	var params []sluice.EnqueueParams
	for n := range 5 {
		params = append(params, sluice.EnqueueParams{Args: orderArgs{Customer: "a", N: n},
			Options: &sluice.EnqueueOptions{Sequence: sluice.SequenceHold}})
	}
	_, err := c.EnqueueMany(ctx, params)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		res, err := c.List(ctx, &sluice.ListFilter{JobFilter: sluice.JobFilter{Statuses: []sluice.JobStatus{sluice.StatusCompleted}}, Limit: 1})
		return err == nil && res.Total == len(params)
	}, time.Minute, 20*time.Millisecond, "the sequence waited for the poll")
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Equal(t, []int{0, 1, 2, 3, 4}, r.order["a"])
	require.Equal(t, 1, r.most["a"])
}
