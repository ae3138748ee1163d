package keyplan_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver/internal/keyplan"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// jobs returns jobs named "<key><n>" (n from 1), due in the order given,
// of topic "t" and priority 0; a key "-" makes jobs without a key, named
// "-<n>".
func jobs(keys ...string) []keyplan.Job {
	var out []keyplan.Job
	seen := map[string]int{}
	for i, k := range keys {
		seen[k]++
		j := keyplan.Job{ID: fmt.Sprintf("%s%d", k, seen[k]), Key: k, Topic: "t", RunAt: t0.Add(time.Duration(i) * time.Second)}
		if k == "-" {
			j.Key = ""
		}
		out = append(out, j)
	}
	return out
}

// byKey counts each job in its key's bucket.
func byKey(j keyplan.Job) []string { return []string{"k:" + j.Key} }

func ptr(s string) *string { return &s }

func TestPlan(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		in     keyplan.Input
		ids    []string
		cursor *string
	}{
		{"nothing to take", keyplan.Input{Limit: 3}, nil, nil},
		{"no limit, claim order", keyplan.Input{Jobs: jobs("a", "b", "a", "c"), Limit: 3}, []string{"a1", "b1", "a2"}, nil},
		{"priority first", keyplan.Input{Jobs: append(jobs("a", "b"), keyplan.Job{ID: "z", Priority: -1, RunAt: t0.Add(time.Hour)}), Limit: 2},
			[]string{"z", "a1"}, nil},
		{"a key at its limit is passed over", keyplan.Input{Jobs: jobs("a", "a", "a", "b", "c"), Limit: 3,
			Buckets: byKey, Room: map[string]int{"k:a": 1}}, []string{"a1", "b1", "c1"}, nil},
		{"a key with no room", keyplan.Input{Jobs: jobs("a", "a", "b"), Limit: 3,
			Buckets: byKey, Room: map[string]int{"k:a": 0}}, []string{"b1"}, nil},
		{"a bucket of a topic", keyplan.Input{Jobs: []keyplan.Job{{ID: "1", Topic: "x"}, {ID: "2", Topic: "x", RunAt: t0}, {ID: "3", Topic: "y", RunAt: t0}},
			Limit: 3, Buckets: func(j keyplan.Job) []string { return []string{"t:" + j.Topic} }, Room: map[string]int{"t:x": 1}},
			[]string{"1", "3"}, nil},
		{"every bucket must have room", keyplan.Input{Jobs: jobs("a", "b"), Limit: 2,
			Buckets: func(j keyplan.Job) []string { return []string{"k:" + j.Key, "t:t"} }, Room: map[string]int{"t:t": 1}},
			[]string{"a1"}, nil},
		{"fair: round-robin from the start", keyplan.Input{Jobs: jobs("a", "a", "a", "a", "b", "c"), Limit: 5, Fair: true},
			[]string{"a1", "b1", "c1", "a2", "a3"}, ptr("a")},
		{"fair: after the cursor, wrapping", keyplan.Input{Jobs: jobs("a", "a", "b", "c"), Limit: 3, Fair: true, Cursor: ptr("a")},
			[]string{"b1", "c1", "a1"}, ptr("a")},
		{"fair: a cursor between keys", keyplan.Input{Jobs: jobs("a", "c"), Limit: 1, Fair: true, Cursor: ptr("b")},
			[]string{"c1"}, ptr("c")},
		{"fair: jobs without a key take turns as one key", keyplan.Input{Jobs: jobs("-", "-", "-", "a", "a"), Limit: 4, Fair: true},
			[]string{"-1", "a1", "-2", "a2"}, ptr("a")},
		{"fair: weights", keyplan.Input{Jobs: jobs("a", "a", "a", "a", "b", "b", "b"), Limit: 6, Fair: true,
			Weight: func(k string) int {
				if k == "a" {
					return 3
				}
				return 1
			}}, []string{"a1", "a2", "a3", "b1", "a4", "b2"}, ptr("b")},
		{"fair: a full key is passed over", keyplan.Input{Jobs: jobs("a", "a", "b", "b"), Limit: 4, Fair: true,
			Buckets: byKey, Room: map[string]int{"k:a": 1}}, []string{"a1", "b1", "b2"}, ptr("b")},
		{"fair: nothing fits, the cursor stays", keyplan.Input{Jobs: jobs("a"), Limit: 4, Fair: true, Cursor: ptr("x"),
			Buckets: byKey, Room: map[string]int{"k:a": 0}}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := keyplan.Plan(tc.in)
			require.Equal(t, tc.ids, out.IDs)
			require.Equal(t, tc.cursor, out.Cursor)
		})
	}
}

func TestPlanCountsWhatItTakes(t *testing.T) {
	t.Parallel()
	out := keyplan.Plan(keyplan.Input{Jobs: jobs("a", "a", "b"), Limit: 10,
		Buckets: func(j keyplan.Job) []string { return []string{"k:" + j.Key, "t:t"} }, Room: map[string]int{"k:a": 5}})
	require.Equal(t, map[string]int{"k:a": 2, "k:b": 1, "t:t": 3}, out.Taken)
}

// TestPlanFairShare is the case fair sharing is for: a key with a huge
// backlog and one with a few jobs; each claim gives the few their turn.
func TestPlanFairShare(t *testing.T) {
	t.Parallel()
	var in []string
	for range 1000 {
		in = append(in, "a")
	}
	in = append(in, "b", "b", "b")
	out := keyplan.Plan(keyplan.Input{Jobs: jobs(in...), Limit: 10, Fair: true})
	require.Equal(t, []string{"a1", "b1", "a2", "b2", "a3", "b3", "a4", "a5", "a6", "a7"}, out.IDs)
}
