package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluiceweb"
)

func queueCommands() []command {
	return []command{{name: "queue", args: "list | VERB QUEUE",
		summary: "list queues; pause, resume, limit, key-limit one, or show its keys (across every process)", run: runQueue}}
}

// queueVerbs are the verbs of queue that name a queue, with the limit
// flags each takes.
var queueVerbs = map[string][]string{
	"pause":     nil,
	"resume":    nil,
	"limit":     {"max-running", "rate", "per"},
	"key-limit": {"max-running", "rate", "per", "sequence", "fair", "key", "reset"},
	"keys":      {"limit"},
}

func runQueue(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("queue", "list | pause QUEUE | resume QUEUE | limit QUEUE [--max-running N] [--rate N --per DURATION] | "+
		"key-limit QUEUE [flags] | keys QUEUE [--limit N]")
	lf := addLimitFlags(fs, true)
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErrorf("queue wants one of list, pause, resume, limit, key-limit or keys")
	}
	verb, rest := pos[0], pos[1:]
	if verb == "list" {
		if len(rest) > 0 {
			return usageErrorf("queue list takes no arguments")
		}
		if err := lf.only("queue list"); err != nil {
			return err
		}
		return c.queueList(ctx)
	}
	takes, ok := queueVerbs[verb]
	if !ok {
		return usageErrorf("unknown queue verb %q: want list, pause, resume, limit, key-limit or keys", verb)
	}
	if len(rest) != 1 || rest[0] == "" {
		return usageErrorf("queue %s wants one queue name", verb)
	}
	if err := lf.only("queue "+verb, takes...); err != nil {
		return err
	}
	queue := rest[0]
	switch verb {
	case "key-limit":
		return c.setKeyLimits(ctx, lf, "queue key-limit", sluice.QueueScope(queue))
	case "keys":
		return c.queueKeys(ctx, queue, lf.limit)
	}
	var limits sluice.QueueLimits
	rate, per, rateGiven, err := lf.rateGiven()
	if err != nil {
		return err
	}
	maxGiven := lf.given()["max-running"]
	if verb == "limit" {
		if !maxGiven && !rateGiven {
			return usageErrorf("queue limit wants --max-running, or --rate with --per, or both")
		}
		limits.MaxRunning, limits.RateLimit, limits.RatePeriod = lf.maxRunning, rate, per
	}
	jc, done, err := c.client(ctx)
	if err != nil {
		return err
	}
	defer done()
	var st *sluice.QueueState
	switch verb {
	case "pause":
		st, err = jc.PauseQueue(ctx, queue)
	case "resume":
		st, err = jc.ResumeQueue(ctx, queue)
	case "limit":
		if !maxGiven || !rateGiven {
			// Keep the limit not given as it is stored.
			old, err := c.queueState(ctx, jc, queue)
			if err != nil {
				return err
			}
			if !maxGiven {
				limits.MaxRunning = old.MaxRunning
			}
			if !rateGiven {
				limits.RateLimit, limits.RatePeriod = old.RateLimit, old.RatePeriod
			}
		}
		st, err = jc.SetQueueLimits(ctx, queue, limits)
	}
	if err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.out(), sluiceweb.NewQueueStateResponse(st))
	}
	fmt.Fprintf(c.out(), "queue %s: %s\n", st.Queue, describeQueue(st))
	return nil
}

// queueState returns queue's stored state, or an empty one.
func (c *cli) queueState(ctx context.Context, jc *jobClient, queue string) (*sluice.QueueState, error) {
	states, err := jc.QueueStates(ctx)
	if err != nil {
		return nil, err
	}
	for _, st := range states {
		if st.Queue == queue {
			return st, nil
		}
	}
	return &sluice.QueueState{Queue: queue}, nil
}

// queueListItem is one queue of queue list --json: its state, and its
// key limits when it has any.
type queueListItem struct {
	sluiceweb.QueueStateResponse
	KeyLimits *sluiceweb.KeyLimitsJSON `json:"key_limits,omitempty"`
}

// queueList prints every queue that is paused or limited: its stored
// state and the limits of its keys.
func (c *cli) queueList(ctx context.Context) error {
	jc, done, err := c.client(ctx)
	if err != nil {
		return err
	}
	defer done()
	states, err := jc.QueueStates(ctx)
	if err != nil {
		return err
	}
	all, err := jc.StoredLimits(ctx)
	if err != nil {
		return err
	}
	byName := map[string]*sluice.QueueState{}
	for _, st := range states {
		byName[st.Queue] = st
	}
	keyed := map[string]*sluice.Limits{}
	for _, l := range all {
		if l.Scope.Kind == sluice.ScopeQueue {
			keyed[l.Scope.Name] = l
			if byName[l.Scope.Name] == nil {
				byName[l.Scope.Name] = &sluice.QueueState{Queue: l.Scope.Name, UpdatedAt: l.UpdatedAt}
			}
		}
	}
	names := slices.Sorted(maps.Keys(byName))
	if c.json {
		items := make([]queueListItem, len(names))
		for i, name := range names {
			items[i].QueueStateResponse = sluiceweb.NewQueueStateResponse(byName[name])
			if l := keyed[name]; l != nil {
				kl := sluiceweb.NewLimitsResponse(l).KeyLimits
				items[i].KeyLimits = &kl
			}
		}
		return writeJSON(c.out(), map[string]any{"items": items})
	}
	if len(names) == 0 {
		fmt.Fprintln(c.out(), "no queue is paused or limited")
		return nil
	}
	tw := tabwriter.NewWriter(c.out(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tSTATE\tMAX RUNNING\tRATE\tKEYS\tCHANGED")
	for _, name := range names {
		st := byName[name]
		state, running, rate, keys := "running", "-", "-", "-"
		if st.Paused {
			state = "paused"
		}
		if st.MaxRunning > 0 {
			running = strconv.Itoa(st.MaxRunning)
		}
		if st.RateLimit > 0 {
			rate = fmt.Sprintf("%d per %s", st.RateLimit, sluiceweb.DurationText(st.RatePeriod))
		}
		changed := st.UpdatedAt
		if l := keyed[name]; l != nil {
			keys = describeKeyLimits(l, false)
			if l.UpdatedAt.After(changed) {
				changed = l.UpdatedAt
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, state, running, rate, keys, changed.Local().Format(time.DateTime))
	}
	return tw.Flush()
}

// queueKeysJSON is queue keys' --json output: the keys as GET
// api/queues/{name}/keys answers them, and the queue's stored limits.
type queueKeysJSON struct {
	Items  []*sluice.KeyCount        `json:"items"`
	Limits *sluiceweb.LimitsResponse `json:"limits,omitempty"`
}

// queueKeys prints the keys of a queue's pending and processing jobs,
// with how many of each and the limits that hold for each.
func (c *cli) queueKeys(ctx context.Context, queue string, limit int) error {
	jc, done, err := c.client(ctx)
	if err != nil {
		return err
	}
	defer done()
	counts, err := jc.KeyCounts(ctx, queue, limit)
	if err != nil {
		return err
	}
	l, err := storedLimits(ctx, jc, sluice.QueueScope(queue))
	if err != nil {
		return err
	}
	if c.json {
		out := queueKeysJSON{Items: nonNil(counts)}
		if l != nil {
			res := sluiceweb.NewLimitsResponse(l)
			out.Limits = &res
		}
		return writeJSON(c.out(), out)
	}
	if l != nil {
		fmt.Fprintf(c.out(), "queue %s: %s\n", queue, describeKeyLimits(l, false))
	}
	keys := keyOrder(counts, l)
	if len(keys) == 0 {
		fmt.Fprintf(c.out(), "no job of queue %s with a key is pending or processing\n", queue)
		return nil
	}
	byKey := map[string]*sluice.KeyCount{}
	for _, kc := range counts {
		byKey[kc.Key] = kc
	}
	tw := tabwriter.NewWriter(c.out(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tPENDING\tPROCESSING\tMAX RUNNING\tRATE\tWEIGHT")
	for _, key := range keys {
		kc := byKey[key]
		if kc == nil {
			kc = &sluice.KeyCount{Key: key}
		}
		maxRunning, rate, per, weight := keyLimitOf(l, key)
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", key, kc.Pending, kc.Processing, orDash(maxRunning, ""),
			orDash(rate, " per "+sluiceweb.DurationText(per)), orDash(weight, ""))
	}
	return tw.Flush()
}

// orDash returns n followed by unit, or "-" for 0.
func orDash(n int, unit string) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n) + unit
}

// describeQueue says a queue's state in a few words.
func describeQueue(st *sluice.QueueState) string {
	s := "running"
	if st.Paused {
		s = "paused"
	}
	if r := rateWords(st.MaxRunning, st.RateLimit, st.RatePeriod); r != "" {
		s += ", " + r
	}
	return s
}
