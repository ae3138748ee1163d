package sluice

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// ExplainReason names what Explain found holds a job.
type ExplainReason string

// The reasons Explain gives.
const (
	// ReasonFinished: the job is completed, failed or cancelled.
	ReasonFinished ExplainReason = "finished"
	// ReasonScheduled: the job was enqueued to run later.
	ReasonScheduled ExplainReason = "scheduled"
	// ReasonBackoff: the job failed and waits for its retry.
	ReasonBackoff ExplainReason = "backoff"
	// ReasonNoWorker: the job is due, but no client with a worker for its
	// topic working its queue has been seen recently.
	ReasonNoWorker ExplainReason = "no_worker"
	// ReasonQueueBusy: the job is due and a client can work it, but every
	// worker of its queue on the clients that can work it is busy with
	// another job (or, for clients that did not record their worker
	// counts, may be).
	ReasonQueueBusy ExplainReason = "queue_busy"
	// ReasonFreeWorker: the job is due and a client that can work it has
	// a free worker for its queue: it should be claimed within about a
	// poll interval. A job that stays here points at a client that cannot
	// claim (stuck, or unable to reach the database).
	ReasonFreeWorker ExplainReason = "free_worker"
	// ReasonRunning: a live client is working the job.
	ReasonRunning ExplainReason = "running"
	// ReasonHolderSilent: the job is held by a client that has not been
	// seen recently; it is rescued once its lease ends.
	ReasonHolderSilent ExplainReason = "holder_silent"
	// ReasonWaiting: the job waits for jobs it depends on
	// (EnqueueOptions.DependsOn) to complete.
	ReasonWaiting ExplainReason = "waiting"
	// ReasonPaused: the job is due, but its queue is paused
	// (Client.PauseQueue).
	ReasonPaused ExplainReason = "paused"
	// ReasonQueueLimit: the job is due, but as many of its queue's jobs
	// run as the queue's MaxRunning allows (Client.SetQueueLimits).
	ReasonQueueLimit ExplainReason = "queue_limit"
	// ReasonSequence: the job is due, but a job ahead of it in its
	// sequence (Explanation.Ahead) is pending, running, or failed and
	// holding the sequence (SequenceHold).
	ReasonSequence ExplainReason = "sequence"
	// ReasonKeyLimit: the job is due, but as many jobs of its key run as
	// the key's MaxRunning allows in its queue or topic
	// (Client.SetKeyLimits).
	ReasonKeyLimit ExplainReason = "key_limit"
	// ReasonKeyRate: the job is due, but its key has started as many jobs
	// in the current window as its rate limit allows.
	ReasonKeyRate ExplainReason = "key_rate"
	// ReasonFairShare: the job is due and free of its key's limits, and its
	// queue shares claims between keys (KeyLimits.Fair): it takes its turn
	// with the other keys that have jobs waiting.
	ReasonFairShare ExplainReason = "fair_share"
)

// clientSeenWithin is how recently a client must have recorded itself to
// count as alive for Explain: several heartbeat intervals at the default.
const clientSeenWithin = time.Minute

// Explanation says, in plain words, why a job is where it is.
type Explanation struct {
	// Job is the job as it was read.
	Job *JobRow
	// Reason names what holds the job.
	Reason ExplainReason
	// Text says it in a sentence.
	Text string
	// Key is the job's key when the reason concerns it (sequence,
	// key_limit, key_rate, fair_share); empty otherwise.
	Key string
	// Ahead is the ID of the job ahead of this one in its sequence, for
	// the reason sequence; empty otherwise.
	Ahead string
}

// Explain says what holds the job with the given ID: finished (how), scheduled
// for later or waiting on a retry's backoff (until when), waiting for the
// jobs it depends on, its queue paused or at its MaxRunning, a job ahead of
// it in its sequence, its key at its limit or out of its rate, its turn in a
// fair queue, no client with a
// worker for its topic seen recently, its queue's workers all busy, a free
// worker that should claim it soon, or held by a client (running, or silent
// for how long). For a due job it also says how many due jobs of its queue
// come before it in claim order. An unknown ID returns an error matching
// ErrNotFound.
func (c *Client[TTx]) Explain(ctx context.Context, id string) (*Explanation, error) {
	job, err := c.exec.JobGet(ctx, &driver.JobGetParams{ID: id})
	if err != nil {
		return nil, fmt.Errorf("explain job %s: %w", id, err)
	}
	now := c.now()
	ex := &Explanation{Job: job}
	if job.Waiting {
		ex.Reason = ReasonWaiting
		ex.Text = fmt.Sprintf("waiting for %d job(s) it depends on to complete: %v", len(job.DependsOn), job.DependsOn)
		return ex, nil
	}
	if job.Status.Finished() || job.Status == StatusPending && job.RunAt.After(now) {
		ex.Reason, ex.Text = explainIdle(job, now)
		return ex, nil
	}
	var state *QueueState
	if job.Status == StatusPending {
		states, err := c.exec.QueueStateList(ctx, &driver.QueueStateListParams{})
		if err != nil {
			return nil, fmt.Errorf("explain job %s: %w", id, err)
		}
		for _, s := range states {
			if s.Queue == job.Queue {
				state = s
			}
		}
	}
	if state != nil && state.Paused {
		ex.Reason = ReasonPaused
		ex.Text = fmt.Sprintf("due since %s, but queue %q is paused (its state last changed at %s): no client starts its jobs until it is resumed",
			stamp(job.RunAt), job.Queue, stamp(state.UpdatedAt))
		return ex, nil
	}
	clients, err := c.exec.ClientList(ctx, &driver.ClientListParams{})
	if err != nil {
		return nil, fmt.Errorf("explain job %s: %w", id, err)
	}
	if job.Status == StatusProcessing {
		ex.Reason, ex.Text = explainHeld(job, clients, now)
		return ex, nil
	}
	if held, err := c.explainKey(ctx, ex, now); err != nil || held {
		if err != nil {
			return nil, fmt.Errorf("explain job %s: %w", id, err)
		}
		return ex, nil
	}
	ex.Reason, ex.Text, err = c.explainDue(ctx, job, clients, state, now)
	if err != nil {
		return nil, fmt.Errorf("explain job %s: %w", id, err)
	}
	return ex, nil
}

// explainAheadLimit is the most jobs ahead of a due job Explain counts.
const explainAheadLimit = 10_000

// explainDue explains a due pending job by the capacity of the live
// clients that can work it: their worker counts for its queue, and the
// jobs of the queue they run.
func (c *Client[TTx]) explainDue(ctx context.Context, job *JobRow, clients []*driver.ClientRow, state *QueueState, now time.Time,
) (ExplainReason, string, error) {
	due := "due since " + stamp(job.RunAt)
	var able []*driver.ClientRow
	for _, cl := range clients {
		if now.Sub(cl.SeenAt) <= clientSeenWithin && slices.Contains(cl.Topics, job.Topic) && slices.Contains(cl.Queues, job.Queue) {
			able = append(able, cl)
		}
	}
	if len(able) == 0 {
		return ReasonNoWorker, fmt.Sprintf("%s, but no client with a worker for topic %q working queue %q has been seen in the last %s",
			due, job.Topic, job.Queue, clientSeenWithin), nil
	}
	// The jobs ahead that matter are those the able clients would claim
	// first: of the topics they work.
	var topics []string
	for _, cl := range able {
		topics = append(topics, cl.Topics...)
	}
	slices.Sort(topics)
	load, err := c.exec.QueueLoad(ctx, &driver.QueueLoadParams{Queue: job.Queue, Now: now,
		Priority: job.Priority, RunAt: job.RunAt, ID: job.ID, Topics: slices.Compact(topics),
		AheadLimit: explainAheadLimit})
	if err != nil {
		return "", "", err
	}
	var workers, busy, running, uncounted int
	for _, cl := range able {
		running += load.Running[cl.ID]
		n, ok := cl.MaxWorkers[job.Queue]
		if !ok {
			uncounted++
			continue
		}
		workers += n
		busy += min(load.Running[cl.ID], n)
	}
	ahead := aheadText(load.Ahead, job.Queue)
	if state != nil && state.MaxRunning > 0 {
		all := 0
		for _, n := range load.Running {
			all += n
		}
		if all >= state.MaxRunning {
			return ReasonQueueLimit, fmt.Sprintf("%s, but %d job(s) of queue %q run, as many as its limit of %d across every client allows; %s",
				due, all, job.Queue, state.MaxRunning, ahead), nil
		}
	}
	switch {
	case busy < workers:
		return ReasonFreeWorker, fmt.Sprintf("%s, and %d of the %d worker(s) of queue %q on the %d client(s) that can work it are free: "+
			"it should be claimed within about a poll interval (%s for this client); %s",
			due, workers-busy, workers, job.Queue, len(able), c.cfg.PollInterval, ahead), nil
	case uncounted > 0:
		return ReasonQueueBusy, fmt.Sprintf("%s and waiting for a free worker, perhaps: %d client(s) can work it and run %d job(s) of queue %q, "+
			"but %d of them recorded no worker counts; %s",
			due, len(able), running, job.Queue, uncounted, ahead), nil
	}
	return ReasonQueueBusy, fmt.Sprintf("%s and waiting for a free worker: all %d worker(s) of queue %q on the %d client(s) that can work it are busy; %s",
		due, workers, job.Queue, len(able), ahead), nil
}

// aheadText says how many due jobs of queue the clients that can work a
// job would claim before it.
func aheadText(n int, queue string) string {
	switch {
	case n == 0:
		return "it is next in claim order"
	case n >= explainAheadLimit:
		return fmt.Sprintf("at least %d due job(s) of queue %q come before it in claim order", n, queue)
	}
	return fmt.Sprintf("%d due job(s) of queue %q come before it in claim order", n, queue)
}

// explainIdle explains a finished job, or a pending one due later.
func explainIdle(job *JobRow, now time.Time) (ExplainReason, string) {
	switch job.Status {
	case StatusCompleted:
		return ReasonFinished, fmt.Sprintf("completed at %s after %d attempt(s)", stamp(job.FinalizedAt), job.Attempt)
	case StatusFailed:
		return ReasonFinished, fmt.Sprintf("failed for good at %s after %d attempt(s); last error: %s",
			stamp(job.FinalizedAt), job.Attempt, lastError(job))
	case StatusCancelled:
		return ReasonFinished, fmt.Sprintf("cancelled at %s", stamp(job.FinalizedAt))
	}
	wait := job.RunAt.Sub(now).Round(time.Second)
	if n := len(job.Errors); n > 0 && job.Errors[n-1].Attempt == job.Attempt && job.Errors[n-1].Error != driver.RequeuedError {
		return ReasonBackoff, fmt.Sprintf("waiting on backoff until %s (in %s) after attempt %d failed: %s",
			stamp(job.RunAt), wait, job.Attempt, lastError(job))
	}
	return ReasonScheduled, fmt.Sprintf("scheduled for %s (in %s)", stamp(job.RunAt), wait)
}

// explainHeld explains a processing job by what is known of its holder.
func explainHeld(job *JobRow, clients []*driver.ClientRow, now time.Time) (ExplainReason, string) {
	i := slices.IndexFunc(clients, func(cl *driver.ClientRow) bool { return cl.ID == job.LockedBy })
	if i < 0 {
		return ReasonHolderSilent, fmt.Sprintf("held by client %s, which has no record (it stopped or died); its lease ends at %s",
			job.LockedBy, stamp(job.LockedUntil))
	}
	age := now.Sub(clients[i].SeenAt).Round(time.Second)
	if age > clientSeenWithin {
		return ReasonHolderSilent, fmt.Sprintf("held by client %s on %s, whose heartbeat is %s old; its lease ends at %s",
			job.LockedBy, clients[i].Host, age, stamp(job.LockedUntil))
	}
	return ReasonRunning, fmt.Sprintf("running since %s on client %s (%s, pid %d), whose heartbeat is %s old",
		stamp(job.AttemptedAt), job.LockedBy, clients[i].Host, clients[i].PID, age)
}

func lastError(job *JobRow) string {
	for i := len(job.Errors) - 1; i >= 0; i-- {
		if job.Errors[i].Error != driver.RequeuedError {
			return job.Errors[i].Error
		}
	}
	return "none recorded"
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
