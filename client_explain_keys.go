package sluice

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// explainKey explains a due pending job by its sequence, its key's limits
// in its queue's and its topic's scopes, or its queue's fair sharing, and
// reports whether one of them holds it (ex then says which).
func (c *Client[TTx]) explainKey(ctx context.Context, ex *Explanation, now time.Time) (bool, error) {
	job := ex.Job
	if job.Sequence != "" {
		ahead, err := c.exec.SequenceAhead(ctx, &driver.SequenceAheadParams{ID: job.ID})
		if err != nil {
			return false, err
		}
		if ahead != nil {
			ex.Reason, ex.Key, ex.Ahead = ReasonSequence, job.Key, ahead.ID
			what := "is " + string(ahead.Status)
			if ahead.Status == StatusFailed {
				what = "failed for good and holds the sequence (hold): requeue, cancel or delete it to let the rest go on"
			}
			ex.Text = fmt.Sprintf("due since %s, but job %s comes before it in the sequence of key %q in queue %q and %s",
				stamp(job.RunAt), ahead.ID, job.Key, job.Queue, what)
			return true, nil
		}
	}
	if job.Key == "" {
		return false, nil
	}
	all, err := c.exec.LimitsList(ctx, &driver.LimitsListParams{})
	if err != nil {
		return false, err
	}
	fair := false
	for _, l := range all {
		if l.Scope != QueueScope(job.Queue) && l.Scope != TopicScope(job.Topic) {
			continue
		}
		fair = fair || l.Fair
		held, err := c.explainKeyLimits(ctx, ex, l, now)
		if err != nil || held {
			return held, err
		}
	}
	if !fair {
		return false, nil
	}
	counts, err := c.exec.KeyLoad(ctx, &driver.KeyLoadParams{Queue: job.Queue, Limit: MaxListLimit})
	if err != nil {
		return false, err
	}
	others := 0
	for _, k := range counts {
		if k.Key != job.Key && k.Pending > 0 {
			others++
		}
	}
	if others == 0 {
		return false, nil
	}
	ex.Reason, ex.Key = ReasonFairShare, job.Key
	ex.Text = fmt.Sprintf("due since %s; queue %q shares its claims fairly between keys, and key %q takes its turn with %d other key(s) with jobs waiting",
		stamp(job.RunAt), job.Queue, job.Key, others)
	return true, nil
}

// explainKeyLimits explains a job by its key's limits in scope l, and
// reports whether they hold it.
func (c *Client[TTx]) explainKeyLimits(ctx context.Context, ex *Explanation, l *Limits, now time.Time) (bool, error) {
	job := ex.Job
	maxRunning, rate, period := l.KeyMaxRunning, l.KeyRateLimit, l.KeyRatePeriod
	for _, k := range l.Keys {
		if k.Key != job.Key {
			continue
		}
		if k.MaxRunning > 0 {
			maxRunning = k.MaxRunning
		}
		if k.RateLimit > 0 {
			rate, period = k.RateLimit, k.RatePeriod
		}
	}
	if maxRunning == 0 && rate == 0 {
		return false, nil
	}
	use, err := c.exec.KeyUse(ctx, &driver.KeyUseParams{Scope: l.Scope, Key: job.Key})
	if err != nil {
		return false, err
	}
	where := fmt.Sprintf("%s %q", l.Scope.Kind, l.Scope.Name)
	switch {
	case maxRunning > 0 && use.Running >= maxRunning:
		ex.Reason, ex.Key = ReasonKeyLimit, job.Key
		ex.Text = fmt.Sprintf("due since %s, but %d job(s) of key %q run in %s, as many as its limit of %d across every client allows",
			stamp(job.RunAt), use.Running, job.Key, where, maxRunning)
		return true, nil
	case rate > 0 && !use.WindowStart.IsZero() && use.WindowStart.Add(period).After(now) && use.WindowCount >= rate:
		ex.Reason, ex.Key = ReasonKeyRate, job.Key
		ex.Text = fmt.Sprintf("due since %s, but key %q started %d job(s) in %s in the window since %s, as many as its rate of %d per %s allows; the next window opens at %s",
			stamp(job.RunAt), job.Key, use.WindowCount, where, stamp(use.WindowStart), rate, period, stamp(use.WindowStart.Add(period)))
		return true, nil
	}
	return false, nil
}
