// Package keyplan chooses the jobs a keyed claim takes: the one place where
// the limits of topics and keys and fair sharing between keys are decided,
// as a pure function of the candidates a driver read and the room each
// limit leaves. Both drivers read the candidates and the rooms in the
// claim's transaction, call Plan, and write what it chose.
package keyplan

import (
	"cmp"
	"slices"
	"time"
)

// Job is a job a claim may take.
type Job struct {
	ID       string
	Key      string // empty for a job without a key
	Topic    string
	Priority int
	RunAt    time.Time
}

// claimOrder orders jobs as every claim does: priority, then run_at, then
// ID.
func claimOrder(a, b Job) int {
	return cmp.Or(cmp.Compare(a.Priority, b.Priority), a.RunAt.Compare(b.RunAt), cmp.Compare(a.ID, b.ID))
}

// Input is what a claim knows when it chooses.
type Input struct {
	// Jobs are the candidates, each once, in any order. The driver leaves
	// out the jobs no claim may take now: not due, held by their
	// sequence.
	Jobs []Job
	// Limit is the most jobs to take.
	Limit int
	// Fair takes jobs round-robin across keys, starting after Cursor;
	// otherwise in claim order.
	Fair bool
	// Cursor is the key a fair claim served last, nil for none; the jobs
	// without a key take their turn as the key "" (first in key order).
	Cursor *string
	// Weight returns how many jobs of a key a fair claim takes per turn
	// (at least 1); nil for 1 each.
	Weight func(key string) int
	// Buckets returns the limits a job counts against: one name for each
	// (a topic's, a key's in its queue, a key's in its topic). A job may be
	// taken only while each has room.
	Buckets func(Job) []string
	// Room is how many more jobs each bucket takes; a bucket not in it
	// takes any number.
	Room map[string]int
}

// Output is what a claim takes.
type Output struct {
	// IDs are the jobs to claim, in the order chosen.
	IDs []string
	// Taken is how many of them count against each bucket.
	Taken map[string]int
	// Cursor is the key a fair claim served last, nil when it took
	// nothing (the stored cursor stays).
	Cursor *string
}

// Plan chooses the jobs a claim takes from in.
func Plan(in Input) Output {
	out := Output{Taken: make(map[string]int)}
	if in.Limit <= 0 || len(in.Jobs) == 0 {
		return out
	}
	room := make(map[string]int, len(in.Room))
	for b, n := range in.Room {
		room[b] = n
	}
	take := func(j Job) bool {
		var buckets []string
		if in.Buckets != nil {
			buckets = in.Buckets(j)
		}
		for _, b := range buckets {
			if n, limited := room[b]; limited && n <= 0 {
				return false
			}
		}
		for _, b := range buckets {
			if _, limited := room[b]; limited {
				room[b]--
			}
			out.Taken[b]++
		}
		out.IDs = append(out.IDs, j.ID)
		return true
	}
	if !in.Fair {
		jobs := slices.Clone(in.Jobs)
		slices.SortFunc(jobs, claimOrder)
		for _, j := range jobs {
			if len(out.IDs) == in.Limit {
				break
			}
			take(j)
		}
		return out
	}
	for _, key := range fairTurns(in, take) {
		out.Cursor = &key
	}
	return out
}

// fairTurns takes jobs key by key in key order from after in.Cursor, each
// key up to its weight per round, round after round until the limit or
// until a round takes nothing, and returns the key of each job taken in
// order.
func fairTurns(in Input, take func(Job) bool) []string {
	byKey := make(map[string][]Job)
	for _, j := range in.Jobs {
		byKey[j.Key] = append(byKey[j.Key], j)
	}
	keys := make([]string, 0, len(byKey))
	for k, jobs := range byKey {
		slices.SortFunc(jobs, claimOrder)
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if in.Cursor != nil {
		start, _ := slices.BinarySearch(keys, *in.Cursor)
		if start < len(keys) && keys[start] == *in.Cursor {
			start++
		}
		keys = append(keys[start:], keys[:start]...)
	}
	var served []string
	taken := 0
	for progress := true; progress && taken < in.Limit; {
		progress = false
		for _, k := range keys {
			quota := 1
			if in.Weight != nil {
				quota = max(1, in.Weight(k))
			}
			jobs := byKey[k]
			for quota > 0 && len(jobs) > 0 && taken < in.Limit {
				j := jobs[0]
				jobs = jobs[1:]
				if take(j) {
					served = append(served, k)
					taken++
					quota--
					progress = true
				}
			}
			byKey[k] = jobs
		}
	}
	return served
}
