package sluice

import (
	"context"
	"fmt"
	"maps"

	"github.com/sluicehq/sluice/driver"
)

// WorkNext claims the next due job of queue whose topic this client has a
// worker for, works it on a goroutine of its own while the caller waits,
// and records its outcome, as a started client would: under the job's
// timeout, through middleware and hooks, with panics recovered, and with a
// failure retried or failed by the retry policy. It returns the job as it
// is afterwards (completed, pending again for a retry or a snooze, failed
// or cancelled), or nil and no error when no job is due.
//
// Like a started client's claims, it obeys the queue's flow control (a
// paused queue yields nothing, its limits hold), and first releases the
// waiting jobs whose dependencies have completed.
//
// It needs no Start and runs no claim loop, heartbeat or rescuer: it is
// for tests (the package sluicetest builds on it) and for tools that work
// one job at a time. A job that runs longer than the lease is not
// extended and may be rescued by a started client meanwhile. With a
// Config.Clock that a test moves forward, it works delayed jobs and
// retries once their time has come.
func (c *Client[TTx]) WorkNext(ctx context.Context, queue string) (*JobRow, error) {
	return c.workNext(ctx, c.exec, queue)
}

// WorkNextTx is WorkNext inside tx: the claim and the outcome are written
// in tx, so a rollback undoes both, and the worker may Ack or Nack the job
// in tx itself. The worker must not use the client outside tx while it
// runs when the database allows one writer at a time (SQLite): tx holds
// the write lock.
func (c *Client[TTx]) WorkNextTx(ctx context.Context, tx TTx, queue string) (*JobRow, error) {
	if isNil(tx) {
		return nil, fmt.Errorf("work next: %w", ErrNilTx)
	}
	return c.workNext(ctx, c.driver.UnwrapExecutor(tx), queue)
}

func (c *Client[TTx]) workNext(ctx context.Context, exec driver.Executor, queue string) (*JobRow, error) {
	if len(c.topics) == 0 {
		return nil, fmt.Errorf("work next: %w", ErrNoWorkers)
	}
	// A run of its own without claim loops: its pool, its completer
	// (writing through exec) and the client's config and events.
	cfg := *c.cfg
	cfg.Queues = maps.Clone(cfg.Queues)
	for name := range cfg.Queues {
		cfg.Queues[name] = QueueConfig{}
	}
	r := newRun(context.WithValue(ctx, clientKey{}, c), &cfg, exec, &c.events, c.topics)
	defer r.pool.Close()
	r.releaseWaiting(ctx, nil)
	now := c.now()
	rows, err := exec.JobClaim(ctx, &driver.JobClaimParams{ClientID: r.lockedBy, Queue: queue, Topics: c.topics,
		Limit: 1, Now: now, LockedUntil: now.Add(cfg.LeaseDuration), Flow: true, Keyed: true})
	if err != nil {
		r.completer.Stop(ctx)
		return nil, fmt.Errorf("work next: %w", err)
	}
	if len(rows) == 0 {
		r.completer.Stop(ctx)
		return nil, nil
	}
	row := rows[0]
	r.held.add(row.ID)
	r.jobsWG.Add(1)
	r.pool.Go(r.prepare(row, func() {}))
	r.jobsWG.Wait()
	r.completer.Stop(context.WithoutCancel(ctx))
	got, err := exec.JobGet(ctx, &driver.JobGetParams{ID: row.ID})
	if err != nil {
		return nil, fmt.Errorf("work next: %w", err)
	}
	return got, nil
}
