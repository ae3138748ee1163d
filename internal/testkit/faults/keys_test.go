package faults_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/faults/faultjob"
)

// The load of the keys scenario: keysLimited keys in the keyed queue, each
// limited to keysMaxRunning running jobs, and keysSequences sequences in
// the sequence queue.
const (
	keysLimited    = 4
	keysMaxRunning = 2
	keysSequences  = 6
)

// Scenario 11: limits per key and sequences under SIGKILL. Three worker
// processes of six workers a queue (one for each of two topics, one for
// both) work two queues: one whose keys may each run two jobs at once
// across processes and topics, claimed fairly between keys, and one whose
// keys' jobs run in sequences (half enqueued with SequenceHold, half under
// the policy stored for the queue). Jobs of every key and sequence are
// enqueued in rounds, and after each, while its jobs run, a process
// holding jobs of one queue or the other is killed with SIGKILL and
// restarted, on leases of one second. From the database afterwards, besides the usual invariants: no
// more than two jobs of one key ran at once, and the jobs of each sequence
// ran one at a time, each starting after the one enqueued before it took
// effect, across the kills and the rescues that followed them.
//
// What "ran" means is a span per attempt (see attemptSpan): from when its
// worker began it to when it wrote its effect or, for an attempt that
// failed or whose process was killed, to when its failure was recorded or
// a rescue took the job back. A killed attempt's job stays processing
// until then, and the limits and sequences count it all along, so its span
// does too. Each span lies within the time the database held the job as
// processing, so a correct claim never lets more spans of one key
// overlap than its limit, nor two of one sequence.
func TestKeysUnderKill9(t *testing.T) {
	for _, d := range bothDrivers {
		t.Run(d.name, func(t *testing.T) {
			tg := d.new(t)
			ctx := t.Context()
			_, err := tg.db.ExecContext(ctx, faultjob.AttemptsDDL)
			require.NoError(t, err)
			_, err = tg.client.SetKeyLimits(ctx, sluice.QueueScope(faultjob.KeyedQueue),
				sluice.KeyLimits{MaxRunning: keysMaxRunning, Fair: true})
			require.NoError(t, err)
			_, err = tg.client.SetKeyLimits(ctx, sluice.QueueScope(faultjob.SequenceQueue),
				sluice.KeyLimits{Sequence: sluice.SequenceHold})
			require.NoError(t, err)

			ld := &keyLoad{tg: tg, count: map[string]int{}, sequences: map[string][]string{}}
			// A backlog: the first key's thrice the others', so that fair
			// sharing has something to share.
			require.NoError(t, ld.enqueue(t, []int{12, 4, 4, 4}, []int{4, 4, 4, 4, 4, 4}))
			// One process per topic, and one for both. Two claims at once
			// for the same topics choose the same first jobs of a key and
			// skip the rows the other holds, so they could not take a
			// key's room twice even without the limits' lock; claims for
			// different topics choose different jobs, and only the lock
			// keeps them from it.
			var procs []*proc
			for _, topics := range []string{faultjob.Topic, faultjob.KeyedTopic, faultjob.Topic + "," + faultjob.KeyedTopic} {
				procs = append(procs, tg.start(t, "-queues", faultjob.KeyedQueue+","+faultjob.SequenceQueue,
					"-topics", topics, "-attempts", "-workers", "6", "-conns", "8", "-work", "150ms", "-lease", "1s"))
			}
			run := span(4*time.Second, 60*time.Second)
			// Each kill takes a process holding jobs of one queue, then
			// of the other, so that rescues take jobs back from both.
			queues := []string{faultjob.KeyedQueue, faultjob.SequenceQueue}
			faults := ld.rounds(t, run, func(round int) { tg.killHolder(t, procs, queues[round%2]) })
			tg.drain(t, 2*time.Minute)
			stopAll(procs)

			spans := tg.attemptSpans(t)
			most := 0
			for _, s := range spans.byKey {
				most = max(most, mostAtOnce(s))
			}
			outOfOrder, overlaps := ld.sequenceOrder(spans)
			v := tg.check(t, faults)
			rescued := spans.rescued[faultjob.KeyedQueue] + spans.rescued[faultjob.SequenceQueue]
			summary(t, "FAULT_KEYS driver=%s processes=%d kills=%d rescued=%d keys=%d limit=%d max_running_seen=%d sequences=%d out_of_order=%d overlaps=%d lost=%d duplicate_effects=%d stuck=%d",
				tg.driver, len(procs), len(faults), rescued, keysLimited, keysMaxRunning, most, len(ld.sequences),
				outOfOrder, overlaps, v.lost, v.dups, v.stuck)
			report(t, "keys", tg, v)
			require.Zero(t, spans.unknown, "attempts whose end the database does not tell")
			for _, q := range queues {
				require.Positive(t, spans.rescued[q], "no kill left an attempt of %s for a rescue", q)
			}
			require.Zero(t, spans.unsequenced, "jobs of the sequence queue that are in no sequence")
			require.LessOrEqual(t, most, keysMaxRunning, "jobs of one key running at once across processes")
			require.Equal(t, keysMaxRunning, most, "no key ever ran as many jobs as its limit: the load proved nothing")
			require.Zero(t, outOfOrder, "jobs of a sequence that began before the one enqueued before them took effect")
			require.Zero(t, overlaps, "attempts of one sequence that overlapped")
		})
	}
}

// keyLoad enqueues the scenario's jobs and remembers each sequence's
// jobs in the order they were enqueued.
type keyLoad struct {
	tg        *target
	n         int
	count     map[string]int      // key -> jobs enqueued
	sequences map[string][]string // sequence key -> job IDs in enqueue order
}

// enqueue enqueues, in one EnqueueMany, perKey[k] jobs of limited key k
// and perSequence[s] of sequence s, interleaved.
func (ld *keyLoad) enqueue(t *testing.T, perKey, perSequence []int) error {
	t.Helper()
	var params []sluice.EnqueueParams
	// Every other job of a key is of the second topic, whose args name
	// the key.
	add := func(queue, key string, seq sluice.SequencePolicy) {
		ld.n++
		ld.count[key]++
		p := sluice.EnqueueParams{Args: faultjob.Args{N: ld.n}, Options: &sluice.EnqueueOptions{
			Queue: queue, Key: key, Sequence: seq, MaxRetries: faultjob.MaxRetries}}
		if ld.count[key]%2 == 0 {
			p.Args, p.Options.Key = faultjob.KeyedArgs{N: ld.n, Key: key}, ""
		}
		params = append(params, p)
	}
	for i := range max(slices.Max(perKey), slices.Max(perSequence)) {
		for k, n := range perKey {
			if i < n {
				add(faultjob.KeyedQueue, "key-"+strconv.Itoa(k), "")
			}
		}
		for s, n := range perSequence {
			if i < n {
				// Half the sequences name their policy, half take the
				// queue's.
				policy := sluice.SequencePolicy("")
				if s%2 == 0 {
					policy = sluice.SequenceHold
				}
				add(faultjob.SequenceQueue, "seq-"+strconv.Itoa(s), policy)
			}
		}
	}
	res, err := ld.tg.client.EnqueueMany(t.Context(), params)
	if err != nil {
		return err
	}
	for _, r := range res {
		ld.tg.commit(r.Job.ID)
		if r.Job.Queue == faultjob.SequenceQueue {
			ld.sequences[r.Job.Key] = append(ld.sequences[r.Job.Key], r.Job.ID)
		}
	}
	return nil
}

// rounds enqueues a round of jobs every 700 ms until run has passed
// (four for each key, two of each topic, and one for each sequence), and
// after each, while the round's jobs run, calls fault with the round's
// number; it returns when each fault began. A round that fails is not retried: its
// jobs were never reported. On Postgres each round wakes every process at
// once, so that their claims race for the keys' room.
func (ld *keyLoad) rounds(t *testing.T, run time.Duration, fault func(round int)) []time.Time {
	t.Helper()
	tick := time.NewTicker(700 * time.Millisecond)
	defer tick.Stop()
	perKey, perSequence := make([]int, keysLimited), make([]int, keysSequences)
	for k := range perKey {
		perKey[k] = 4
	}
	for s := range perSequence {
		perSequence[s] = 1
	}
	var faults []time.Time
	for round, end := 0, time.Now().Add(run); time.Now().Before(end); round++ {
		if err := ld.enqueue(t, perKey, perSequence); err != nil {
			t.Logf("enqueue: %v", err)
		}
		time.Sleep(jitter(20, 150))
		faults = append(faults, time.Now())
		fault(round)
		<-tick.C
	}
	return faults
}

// keySpans are the attempts of the scenario's jobs, as attemptSpans reads
// them.
type keySpans struct {
	// byKey are the attempts of each key of the keyed queue.
	byKey map[string]map[string]*effect
	// byJob are the attempts of each job of the sequence queue, and done
	// when each took effect.
	byJob map[string][]*effect
	done  map[string]int64
	// rescued counts the attempts of each queue that a rescue ended.
	rescued map[string]int
	// unsequenced counts the jobs of the sequence queue in no sequence,
	// unknown the attempts whose end the database does not tell.
	unsequenced, unknown int
}

// attemptSpan returns the span of one attempt of job that its worker began
// at start (an effect, for mostAtOnce), in Unix microseconds: from when
// its worker began it, after its claim committed, to when it ended. An
// attempt that completed the job ended when it wrote its effect, before
// its Ack committed; one that failed, when its client recorded the
// failure; one whose process was killed, when a rescue took the job back
// after its lease expired (AttemptRecord.EndedAt of a "lease expired"
// attempt), before the rescue committed. Until that commit the job was
// processing and counted against its key's limit and held its sequence,
// and any claim that took another job in its place saw the commit first.
// took is the job's effect. rescued tells an attempt that a rescue ended,
// ok is false when the end is not recorded.
func attemptSpan(job *sluice.JobRow, attempt int, start int64, took *effect) (span *effect, rescued, ok bool) {
	if job.Status == sluice.StatusCompleted && attempt == job.Attempt && took != nil {
		return &effect{start: start, done: took.done}, false, true
	}
	for _, a := range job.History() {
		if a.Attempt == attempt && !a.EndedAt.IsZero() {
			return &effect{start: start, done: a.EndedAt.UnixMicro()}, a.Error == "lease expired", true
		}
	}
	return nil, false, false
}

// attemptSpans reads the attempts the workers recorded and ends each as
// attemptSpan says, grouped by key (keyed queue) and by job (sequence
// queue).
func (tg *target) attemptSpans(t *testing.T) keySpans {
	t.Helper()
	jobs := tg.listJobs(t, faultjob.KeyedQueue, faultjob.SequenceQueue)
	effects := tg.effects(t)
	spans := keySpans{byKey: map[string]map[string]*effect{}, byJob: map[string][]*effect{}, done: map[string]int64{},
		rescued: map[string]int{}}
	for id, j := range jobs {
		if j.Queue == faultjob.SequenceQueue && j.Sequence == "" {
			spans.unsequenced++
		}
		if e := effects[id]; e != nil {
			spans.done[id] = e.done
		}
	}
	attempts := tg.attempts(t)
	for _, a := range attempts {
		id, attempt, start := a.job, a.attempt, a.start
		j := jobs[id]
		require.NotNil(t, j, "an attempt of job %s, which is not in the keyed queues", id)
		s, rescued, ok := attemptSpan(j, attempt, start, effects[id])
		if rescued {
			spans.rescued[j.Queue]++
		}
		if !ok {
			spans.unknown++
			t.Logf("attempt %d of job %s (%s): no end recorded; history %+v", attempt, id, j.Status, j.History())
			continue
		}
		switch j.Queue {
		case faultjob.KeyedQueue:
			if spans.byKey[j.Key] == nil {
				spans.byKey[j.Key] = map[string]*effect{}
			}
			spans.byKey[j.Key][fmt.Sprintf("%s/%d", id, attempt)] = s
		case faultjob.SequenceQueue:
			spans.byJob[id] = append(spans.byJob[id], s)
		}
	}
	t.Logf("%d attempts recorded, ended by a rescue: %v", len(attempts), spans.rescued)
	return spans
}

// attempt is one attempt a worker recorded the start of (see
// faultjob.AttemptsDDL): its job, its number, and when it began in Unix
// microseconds.
type attempt struct {
	job     string
	attempt int
	start   int64
}

// attempts reads every attempt the workers recorded.
func (tg *target) attempts(t *testing.T) []attempt {
	t.Helper()
	rows, err := tg.db.QueryContext(t.Context(), `SELECT job_id, attempt, started_at FROM fault_attempts`)
	require.NoError(t, err)
	defer rows.Close()
	var out []attempt
	for rows.Next() {
		var a attempt
		require.NoError(t, rows.Scan(&a.job, &a.attempt, &a.start))
		out = append(out, a)
	}
	require.NoError(t, rows.Err())
	return out
}

// listJobs returns the jobs of queues by ID.
func (tg *target) listJobs(t *testing.T, queues ...string) map[string]*sluice.JobRow {
	t.Helper()
	out := map[string]*sluice.JobRow{}
	f := &sluice.ListFilter{JobFilter: sluice.JobFilter{Queues: queues}, Limit: sluice.MaxListLimit}
	for {
		res, err := tg.client.List(t.Context(), f)
		require.NoError(t, err)
		for _, j := range res.Jobs {
			out[j.ID] = j
		}
		if res.NextCursor == "" {
			return out
		}
		f.Cursor = res.NextCursor
	}
}

// sequenceOrder counts, over every sequence, the jobs that began (any of
// their attempts) before the job enqueued before them took effect, or
// whose predecessor never did, and the pairs of attempts of different jobs
// of the sequence whose spans overlap.
func (ld *keyLoad) sequenceOrder(spans keySpans) (outOfOrder, overlaps int) {
	for _, ids := range ld.sequences {
		var all []*effect
		for i, id := range ids {
			for _, s := range spans.byJob[id] {
				for _, other := range all {
					if s.start < other.done && other.start < s.done {
						overlaps++
					}
				}
			}
			all = append(all, spans.byJob[id]...)
			if i == 0 {
				continue
			}
			done, ok := spans.done[ids[i-1]]
			for _, s := range spans.byJob[id] {
				if !ok || s.start < done {
					outOfOrder++
					break
				}
			}
		}
	}
	return outOfOrder, overlaps
}

// killHolder kills with SIGKILL, and starts again, one of procs holding a
// job of queue, waiting up to 300 ms for one to; or one chosen at random
// if none does by then.
func (tg *target) killHolder(t *testing.T, procs []*proc, queue string) {
	t.Helper()
	var holders []*proc
	for deadline := time.Now().Add(300 * time.Millisecond); len(holders) == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		rows, err := tg.db.QueryContext(t.Context(),
			`SELECT DISTINCT locked_by FROM sluice_jobs WHERE status = 'processing' AND queue = '`+queue+`'`)
		require.NoError(t, err)
		var lockedBy []string
		for rows.Next() {
			var by string
			require.NoError(t, rows.Scan(&by))
			lockedBy = append(lockedBy, by)
		}
		require.NoError(t, rows.Err())
		rows.Close()
		for _, p := range procs {
			id := faultjob.ClientID(p.cmd.Process.Pid)
			if slices.ContainsFunc(lockedBy, func(by string) bool { return strings.HasPrefix(by, id) }) {
				holders = append(holders, p)
			}
		}
	}
	if len(holders) == 0 {
		holders = procs
	}
	killAndRestart(holders)
}
