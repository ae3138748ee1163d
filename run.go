package sluice

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/completer"
	"github.com/sluicehq/sluice/internal/fetcher"
	"github.com/sluicehq/sluice/internal/lease"
	"github.com/sluicehq/sluice/internal/pool"
	"github.com/sluicehq/sluice/internal/rollup"
	"github.com/sluicehq/sluice/internal/tick"
)

// stopGrace is how long, after a job's context is cancelled, the client
// waits for its worker to return before giving up on it.
const stopGrace = 500 * time.Millisecond

// errStopping is the cause of a job context cancelled by Stop.
var errStopping = errors.New("sluice: client stopping")

// poolIdle is how long a pool goroutine waits for its next job before it
// ends.
const poolIdle = 5 * time.Second

// run is one Start-to-Stop run of a client: a claim loop per queue, the
// pool that works the claimed jobs, the completer that writes their
// outcomes, and the loops that keep the run's leases, presence, progress and
// retention (see run_maintain.go). Working jobs needs nothing of the
// client's transaction type, so a run is not generic: the client hands it
// its config, executor and event hub.
type run struct {
	cfg    *Config
	exec   driver.Executor
	events *eventHub
	// topics are the topics the client has workers for, sorted.
	topics []string

	lockedBy string
	fetchers map[string]*fetcher.Fetcher
	// flow is what the run last read of the queue states (see readFlow).
	flow atomic.Pointer[flowState]
	// flowNotes counts the changes this client made to flow (see
	// updateFlow and readFlow).
	flowNotes atomic.Uint64
	completer *completer.Completer
	// pool runs the claimed jobs of every queue.
	pool *pool.Pool[*jobRun]

	// fetchCtx ends when fetching stops; maintCtx when heartbeat and rescue
	// stop. jobsCtx carries the values every job context has, and never
	// ends: a job context made from it is not registered with it, which
	// with a thousand jobs running took a shared lock and a shared map on
	// every job; Stop ends the running jobs' contexts itself (see
	// runningJobs.cancelAll).
	fetchCtx   context.Context
	stopFetch  context.CancelFunc
	maintCtx   context.Context
	stopMaint  context.CancelFunc
	jobsCtx    context.Context
	stopListen func()
	fetchWG    sync.WaitGroup
	maintWG    sync.WaitGroup
	jobsWG     sync.WaitGroup
	stopOnce   sync.Once
	stopped    chan struct{}
	stopErr    error
	running    runningJobs
	held       heldJobs
	// mw maps each topic whose worker has work middleware (its own or the
	// Config's) to that middleware, the Config's first.
	mw map[string][]WorkMiddleware
	// sched enqueues the jobs of schedules and periodic jobs.
	sched *scheduler
	// releaseKick asks the flow loop for a release pass soon: a task of a
	// workflow finished here, and the tasks after it may be free to run.
	releaseKick chan struct{}
	// finished are the workflows and batches whose tasks finished here
	// since the last release pass: a kicked pass looks at their waiting
	// jobs alone.
	finished finishedGroups
	// metrics gathers what attempts did, for the metrics store.
	metrics rollup.Recorder
}

// newRun returns a run of a client with the given config, executor, event
// hub and topics. base carries the values every job context has; its
// cancellation is ignored.
func newRun(base context.Context, cfg *Config, exec driver.Executor, events *eventHub, topics []string) *run {
	base = context.WithValue(context.WithoutCancel(base), loggerKey{}, cfg.Logger)
	r := &run{
		cfg:      cfg,
		exec:     exec,
		events:   events,
		topics:   topics,
		lockedBy: cfg.ClientID + "/" + randomSuffix(),
		fetchers: make(map[string]*fetcher.Fetcher),
		stopped:  make(chan struct{}),

		releaseKick: make(chan struct{}, 1),
	}
	r.fetchCtx, r.stopFetch = context.WithCancel(base)
	r.maintCtx, r.stopMaint = context.WithCancel(base)
	r.jobsCtx = base
	r.pool = pool.New(poolIdle, r.execute)
	for topic, unit := range cfg.Workers.units {
		if mw := slices.Concat(cfg.WorkMiddleware, unit.middleware); len(mw) > 0 {
			if r.mw == nil {
				r.mw = make(map[string][]WorkMiddleware)
			}
			r.mw[topic] = mw
		}
	}
	capacity := 0
	for name, q := range cfg.Queues {
		if q.MaxWorkers == 0 {
			continue
		}
		capacity += q.MaxWorkers
		var release func()
		f := fetcher.New(fetcher.Config{
			Exec:          exec,
			ClientID:      r.lockedBy,
			Queue:         name,
			Topics:        topics,
			MaxWorkers:    q.MaxWorkers,
			PollInterval:  cfg.PollInterval,
			LeaseDuration: cfg.LeaseDuration,
			Clock:         cfg.now,
			Logger:        cfg.Logger,
			Start: func(row *driver.JobRow) {
				r.held.add(row.ID)
				r.jobsWG.Add(1)
				r.pool.Go(r.prepare(row, release))
			},
			Flow:  func() bool { return r.flowFor(name) },
			Keyed: func() bool { return r.keyedFor(name) },
		})
		release = f.Done // made once per queue: a job carries it at no cost
		r.fetchers[name] = f
	}
	r.completer = completer.New(exec, cfg.Logger, 2*capacity+16, cfg.LeaseDuration/2)
	return r
}

// start starts the run's goroutines. d is the client's driver, asked
// whether it can deliver wake-ups (driver.Notifier) and keep its own
// storage (driver.Maintainer). ctx bounds start-up only.
func (r *run) start(ctx context.Context, d any) {
	if n, ok := d.(driver.Notifier); ok && !r.cfg.PollOnly {
		stop, err := n.Listen(r.maintCtx, func(note driver.Notification) { r.wake(note.Queue, note.Committed) })
		if err != nil {
			r.cfg.Logger.Warn("sluice: cannot listen for new jobs; polling only", "error", err)
		} else {
			r.stopListen = stop
		}
	}
	me := r.presence()
	r.record(ctx, me)
	r.readFlow(ctx)
	for _, f := range r.fetchers {
		r.fetchWG.Go(func() { f.Run(r.fetchCtx) })
	}
	cfg := r.cfg
	r.maintWG.Go(func() {
		lease.Heartbeat(r.maintCtx, r.exec, r.lockedBy, r.held.ids, cfg.HeartbeatInterval, cfg.LeaseDuration,
			cfg.Clock, cfg.Logger)
	})
	r.maintWG.Go(func() { r.watchRevoked(r.maintCtx) })
	r.maintWG.Go(func() { r.clean(r.maintCtx) })
	r.maintWG.Go(func() { r.writeMetrics(r.maintCtx) })
	r.maintWG.Go(func() { r.present(r.maintCtx, me) })
	r.maintWG.Go(func() {
		tick.Every(r.maintCtx, cfg.ProgressInterval, func() { r.writeProgress(r.maintCtx) })
	})
	r.maintWG.Go(func() {
		// The flow loop: queue states and a release pass over every
		// waiting job every poll, and a pass over the waiting jobs of a
		// workflow or batch soon after one of its tasks finishes here,
		// so that the next task starts without waiting for the poll.
		tick.EveryOrKicked(r.maintCtx, max(cfg.PollInterval, minFlowInterval), minFlowInterval, r.releaseKick,
			func(kicked bool) {
				groups := r.finished.take()
				if kicked {
					if len(groups) > 0 { // else a pass over every job took them
						r.releaseWaiting(r.maintCtx, groups)
					}
					return
				}
				r.readFlow(r.maintCtx)
				r.releaseWaiting(r.maintCtx, nil)
			})
	})
	r.maintWG.Go(func() {
		lease.Rescue(r.maintCtx, r.exec, cfg.RescueInterval, cfg.Clock, cfg.Logger, r.rescued)
	})
	if r.sched != nil {
		r.maintWG.Go(func() { r.sched.run(r.maintCtx) })
	}
	if m, ok := d.(driver.Maintainer); ok {
		r.maintWG.Go(func() { m.Maintain(r.maintCtx, cfg.Logger) })
	}
	cfg.Logger.Debug("sluice: client started", "client_id", r.lockedBy, "topics", r.topics)
	if h := cfg.Hooks.ClientStarted; h != nil {
		r.hook("ClientStarted", nil, func() { h(r.jobsCtx, r.lockedBy) })
	}
}

// wake asks the claim loop of queue, if the run has one, to claim at once.
// committed is false when the new jobs may belong to a transaction that has
// not committed yet.
func (r *run) wake(queue string, committed bool) {
	if f := r.fetchers[queue]; f != nil {
		f.Wake(committed)
	}
}

// wakeAt asks the claim loop of queue, if the run has one, to claim at at.
func (r *run) wakeAt(queue string, at time.Time) {
	if f := r.fetchers[queue]; f != nil {
		f.WakeAt(at)
	}
}

// rescued reports a job the run's rescuer took back, and wakes its queue
// if the job can run again.
func (r *run) rescued(row *driver.JobRow) {
	if row.Status == StatusPending {
		r.wake(row.Queue, true)
	}
	r.events.emit(EventRescued, row, r.cfg.now().Sub(row.AttemptedAt))
}

// stop stops the run as Client.Stop describes, and calls detached once the
// run is over, before any call of stop returns.
func (r *run) stop(ctx context.Context, cancelFirst bool, detached func()) error {
	r.stopOnce.Do(func() {
		go func() {
			r.stopErr = r.shutdown(ctx, cancelFirst)
			detached()
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

func (r *run) shutdown(ctx context.Context, cancelFirst bool) error {
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
	r.cfg.Logger.Debug("sluice: client stopped", "client_id", r.lockedBy)
	if h := r.cfg.Hooks.ClientStopped; h != nil {
		r.hook("ClientStopped", nil, func() { h(r.jobsCtx, r.lockedBy) })
	}
	return err
}
