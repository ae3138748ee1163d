package sluice

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/completer"
	"github.com/sluicehq/sluice/internal/fetcher"
	"github.com/sluicehq/sluice/internal/lease"
	"github.com/sluicehq/sluice/internal/pool"
	"github.com/sluicehq/sluice/internal/tick"
)

// stopGrace is how long, after a job's context is cancelled, the client
// waits for its worker to return before giving up on it.
const stopGrace = 500 * time.Millisecond

// errStopping is the cause of a job context cancelled by Stop.
var errStopping = errors.New("sluice: client stopping")

// run is one Start-to-Stop run of a client.
type run struct {
	lockedBy  string
	fetchers  map[string]*fetcher.Fetcher
	completer *completer.Completer
	// pool runs the claimed jobs of every queue.
	pool *pool.Pool[claimed]

	// fetchCtx ends when fetching stops; maintCtx when heartbeat and rescue
	// stop. jobsCtx carries the values every job context has, and never
	// ends: a job context made from it is not registered with it, which
	// with a thousand jobs running took a shared lock and a shared map on
	// every job; Stop ends the running jobs' contexts itself (see
	// runningJobs.cancelAll).
	fetchCtx    context.Context
	stopFetch   context.CancelFunc
	maintCtx    context.Context
	stopMaint   context.CancelFunc
	jobsCtx     context.Context
	stopListen  func()
	fetchWG     sync.WaitGroup
	maintWG     sync.WaitGroup
	jobsWG      sync.WaitGroup
	stopOnce    sync.Once
	stopped     chan struct{}
	stopErr     error
	cancelFirst bool
	running     runningJobs
	held        heldJobs
}

// claimed is a job claimed by one of the run's fetchers, prepared and
// handed to the pool.
type claimed struct {
	f  *fetcher.Fetcher
	jr *jobRun
}

// poolIdle is how long a pool goroutine waits for its next job before it
// ends.
const poolIdle = 5 * time.Second

func (r *run) wake(queue string, committed bool) {
	if f := r.fetchers[queue]; f != nil {
		f.Wake(committed)
	}
}

func (r *run) wakeAt(queue string, at time.Time) {
	if f := r.fetchers[queue]; f != nil {
		f.WakeAt(at)
	}
}

// Start starts working jobs: one claim loop per queue with workers, a
// heartbeat that keeps running jobs' leases, a rescuer that takes back
// jobs of clients that are gone, a check that stops workers whose jobs
// were cancelled, a writer of the progress running jobs report (see
// ReportProgress), and a cleaner that deletes expired finished jobs (see
// Config.Retention). ctx bounds start-up only and its values
// reach job contexts; cancelling it later does not stop the client: Stop
// does. It returns ErrNoWorkers for an insert-only client and
// ErrAlreadyStarted if running.
func (c *Client[TTx]) Start(ctx context.Context) error {
	if len(c.topics) == 0 {
		return fmt.Errorf("start: %w", ErrNoWorkers)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.run.Load() != nil {
		return fmt.Errorf("start: %w", ErrAlreadyStarted)
	}
	r := c.newRun(ctx)
	if n, ok := c.driver.(driver.Notifier); ok && !c.cfg.PollOnly {
		stop, err := n.Listen(r.maintCtx, func(note driver.Notification) { r.wake(note.Queue, note.Committed) })
		if err != nil {
			c.cfg.Logger.Warn("sluice: cannot listen for new jobs; polling only", "error", err)
		} else {
			r.stopListen = stop
		}
	}
	me := c.presence(r)
	c.record(ctx, me)
	for _, f := range r.fetchers {
		r.fetchWG.Go(func() { f.Run(r.fetchCtx) })
	}
	r.maintWG.Go(func() {
		lease.Heartbeat(r.maintCtx, c.exec, r.lockedBy, r.held.ids, c.cfg.HeartbeatInterval, c.cfg.LeaseDuration,
			c.cfg.Clock, c.cfg.Logger)
	})
	r.maintWG.Go(func() { c.watchRevoked(r.maintCtx, r) })
	r.maintWG.Go(func() { c.clean(r.maintCtx) })
	r.maintWG.Go(func() { c.present(r.maintCtx, me) })
	r.maintWG.Go(func() {
		tick.Every(r.maintCtx, c.cfg.ProgressInterval, func() { c.writeProgress(r.maintCtx, r) })
	})
	r.maintWG.Go(func() {
		lease.Rescue(r.maintCtx, c.exec, c.cfg.RescueInterval, c.cfg.Clock, c.cfg.Logger,
			func(row *driver.JobRow) { c.rescued(r, row) })
	})
	if m, ok := c.driver.(driver.Maintainer); ok {
		r.maintWG.Go(func() { m.Maintain(r.maintCtx, c.cfg.Logger) })
	}
	c.run.Store(r)
	c.cfg.Logger.Debug("sluice: client started", "client_id", r.lockedBy, "topics", c.topics)
	return nil
}

// rescued reports a job the run's rescuer took back, and wakes its queue
// if the job can run again.
func (c *Client[TTx]) rescued(r *run, row *driver.JobRow) {
	if row.Status == StatusPending {
		r.wake(row.Queue, true)
	}
	c.emit(EventRescued, row, c.now().Sub(row.AttemptedAt))
}

func (c *Client[TTx]) newRun(ctx context.Context) *run {
	base := context.WithValue(context.WithoutCancel(ctx), clientKey{}, c)
	r := &run{
		lockedBy: c.cfg.ClientID + "/" + randomSuffix(),
		fetchers: make(map[string]*fetcher.Fetcher),
		stopped:  make(chan struct{}),
	}
	r.fetchCtx, r.stopFetch = context.WithCancel(base)
	r.maintCtx, r.stopMaint = context.WithCancel(base)
	r.jobsCtx = base
	r.pool = pool.New(poolIdle, func(j claimed) bool { return c.execute(r, j.f, j.jr) })
	capacity := 0
	for name, q := range c.cfg.Queues {
		if q.MaxWorkers == 0 {
			continue
		}
		capacity += q.MaxWorkers
		var f *fetcher.Fetcher
		f = fetcher.New(fetcher.Config{
			Exec:          c.exec,
			ClientID:      r.lockedBy,
			Queue:         name,
			Topics:        c.topics,
			MaxWorkers:    q.MaxWorkers,
			PollInterval:  c.cfg.PollInterval,
			LeaseDuration: c.cfg.LeaseDuration,
			Clock:         func() time.Time { return c.now() },
			Logger:        c.cfg.Logger,
			Start: func(row *driver.JobRow) {
				r.held.add(row.ID)
				r.jobsWG.Add(1)
				r.pool.Go(claimed{f: f, jr: c.prepare(r, row)})
			},
		})
		r.fetchers[name] = f
	}
	r.completer = completer.New(c.exec, c.cfg.Logger, 2*capacity+16, c.cfg.LeaseDuration/2)
	return r
}

// Stop stops the client gracefully, in the manner of http.Server.Shutdown:
// it stops claiming jobs, then waits for running jobs to finish. If ctx ends
// first, it cancels the running jobs' contexts, waits briefly for their
// workers to return, and hands every unfinished job back as pending at once,
// so that it runs again without waiting for its lease to expire (a worker
// that returns Cancel or Snooze is taken at its word); it then returns ctx's
// error. The outcomes of finished and handed-back jobs are written before
// Stop returns, which past the deadline takes at most a few seconds more,
// and no goroutine of the client outlives it (a worker that ignores its
// context's cancellation is the one exception). Stop is idempotent and a
// no-op on a client that was never started; concurrent calls wait for the
// same shutdown, and the earliest deadline among them applies.
func (c *Client[TTx]) Stop(ctx context.Context) error {
	return c.stop(ctx, false)
}

// StopAndCancel stops the client as Stop does, but cancels running jobs'
// contexts at once instead of waiting for them to finish.
func (c *Client[TTx]) StopAndCancel(ctx context.Context) error {
	return c.stop(ctx, true)
}

func (c *Client[TTx]) stop(ctx context.Context, cancelFirst bool) error {
	r := c.run.Load()
	if r == nil {
		return nil
	}
	r.stopOnce.Do(func() {
		go func() {
			r.stopErr = c.shutdown(ctx, r, cancelFirst)
			c.mu.Lock()
			c.run.CompareAndSwap(r, nil)
			c.mu.Unlock()
			close(r.stopped)
		}()
	})
	if cancelFirst {
		r.stopFetch() // so that no handed-back job is claimed again
		r.running.cancelAll(errStopping)
	}
	select {
	case <-r.stopped:
		return r.stopErr
	case <-ctx.Done():
		// Another Stop is in charge; this deadline hands the jobs back.
		r.stopFetch()
		r.running.cancelAll(errStopping)
		r.completer.GiveUp()
		<-r.stopped
		return ctx.Err()
	}
}

func (c *Client[TTx]) shutdown(ctx context.Context, r *run, cancelFirst bool) error {
	r.stopFetch()
	r.fetchWG.Wait()
	if cancelFirst {
		r.running.cancelAll(errStopping)
	}
	jobsDone := make(chan struct{})
	go func() { r.jobsWG.Wait(); close(jobsDone) }()
	var err error
	select {
	case <-jobsDone:
	case <-ctx.Done():
		err = ctx.Err()
		r.running.cancelAll(errStopping)
		// Outcomes still failing to be written are given up, so that no
		// job waits on a full completer queue.
		r.completer.GiveUp()
		<-jobsDone
	}
	// Record what finished, allowing the database a little time even if
	// ctx has ended.
	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	r.completer.Stop(flushCtx)
	cancel()
	if r.stopListen != nil {
		r.stopListen()
	}
	r.stopMaint()
	r.maintWG.Wait()
	r.running.cancelAll(errStopping)
	r.pool.Close()
	c.cfg.Logger.Debug("sluice: client stopped", "client_id", r.lockedBy)
	return err
}
