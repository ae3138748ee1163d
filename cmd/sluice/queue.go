package main

import (
	"context"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluiceweb"
)

func queueCommands() []command {
	return []command{{name: "queue", args: "list | pause|resume QUEUE | limit QUEUE",
		summary: "show, pause, resume or limit queues across every process", run: runQueue}}
}

func runQueue(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("queue", "list | pause QUEUE | resume QUEUE | limit QUEUE [--max-running N] [--rate N --per DURATION]")
	maxRunning := fs.Int("max-running", -1, "limit: how many of the queue's jobs may run at once, across every process (0 removes the limit)")
	rate := fs.Int("rate", -1, "limit: how many of the queue's jobs may start per --per, across every process (0 removes the limit)")
	per := fs.Duration("per", 0, "limit: the period of --rate, e.g. 1s or 1m")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErrorf("queue wants one of list, pause, resume or limit")
	}
	verb, rest := pos[0], pos[1:]
	if verb == "list" {
		if len(rest) > 0 {
			return usageErrorf("queue list takes no arguments")
		}
		return c.queueList(ctx)
	}
	if verb != "pause" && verb != "resume" && verb != "limit" {
		return usageErrorf("unknown queue verb %q: want list, pause, resume or limit", verb)
	}
	if len(rest) != 1 || rest[0] == "" {
		return usageErrorf("queue %s wants one queue name", verb)
	}
	queue := rest[0]
	var limits sluice.QueueLimits
	if verb == "limit" {
		if *maxRunning < 0 && *rate < 0 {
			return usageErrorf("queue limit wants --max-running, or --rate with --per, or both")
		}
		if *rate > 0 && *per <= 0 {
			return usageErrorf("--rate wants --per, a positive duration")
		}
		if *rate <= 0 && *per != 0 {
			return usageErrorf("--per goes with --rate")
		}
		limits.MaxRunning, limits.RateLimit, limits.RatePeriod = max(*maxRunning, 0), max(*rate, 0), *per
	} else if *maxRunning >= 0 || *rate >= 0 || *per != 0 {
		return usageErrorf("--max-running, --rate and --per go with queue limit")
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
		if *maxRunning < 0 || *rate < 0 {
			// Keep the limit not given as it is stored.
			old, err := c.queueState(ctx, jc, queue)
			if err != nil {
				return err
			}
			if *maxRunning < 0 {
				limits.MaxRunning = old.MaxRunning
			}
			if *rate < 0 {
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

// queueList prints the stored state of every queue that has one.
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
	if c.json {
		items := make([]sluiceweb.QueueStateResponse, len(states))
		for i, st := range states {
			items[i] = sluiceweb.NewQueueStateResponse(st)
		}
		return writeJSON(c.out(), map[string]any{"items": items})
	}
	if len(states) == 0 {
		fmt.Fprintln(c.out(), "no queue is paused or limited")
		return nil
	}
	tw := tabwriter.NewWriter(c.out(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tSTATE\tMAX RUNNING\tRATE\tCHANGED")
	for _, st := range states {
		state, running, rate := "running", "-", "-"
		if st.Paused {
			state = "paused"
		}
		if st.MaxRunning > 0 {
			running = strconv.Itoa(st.MaxRunning)
		}
		if st.RateLimit > 0 {
			rate = fmt.Sprintf("%d per %s", st.RateLimit, st.RatePeriod)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", st.Queue, state, running, rate, st.UpdatedAt.Local().Format(time.DateTime))
	}
	return tw.Flush()
}

// describeQueue says a queue's state in a few words.
func describeQueue(st *sluice.QueueState) string {
	s := "running"
	if st.Paused {
		s = "paused"
	}
	if st.MaxRunning > 0 {
		s += fmt.Sprintf(", at most %d running at once", st.MaxRunning)
	}
	if st.RateLimit > 0 {
		s += fmt.Sprintf(", at most %d started per %s", st.RateLimit, st.RatePeriod)
	}
	return s
}
