// Package faultjob is the job, worker and producer the fault-injection
// suite runs in its worker processes and in the test itself: a worker that
// makes one business write per job and acks the job in the same
// transaction, so that effects can be counted per job afterwards.
package faultjob

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/sluicehq/sluice"
)

// AppName is the application_name of the worker processes' Postgres
// connections, so that the suite can find and kill them.
const AppName = "sluice_faultworker"

// EffectsDDL creates the business table: one row per effect, with no unique
// key on job_id, so that a job whose effect committed twice shows twice.
// started_at is when the worker began the job, done_at when it wrote the
// effect, both on the worker's clock in Unix microseconds.
const EffectsDDL = `CREATE TABLE IF NOT EXISTS fault_effects (job_id TEXT NOT NULL, done_at BIGINT NOT NULL,
	started_at BIGINT NOT NULL)`

// ClientID is the Config.ClientID of the worker process pid, which
// begins the LockedBy of every job it holds, so that the suite can tell
// which process holds a job.
func ClientID(pid int) string { return fmt.Sprintf("faultworker[%d]", pid) }

// AttemptsDDL creates the table of attempts: one row per attempt a worker
// began, written in a transaction of its own before the attempt's work
// (see Worker.Attempts), so that it stays when the process is killed in
// the middle of the attempt. started_at is in Unix microseconds on the
// worker's clock, as in fault_effects.
const AttemptsDDL = `CREATE TABLE IF NOT EXISTS fault_attempts (job_id TEXT NOT NULL, attempt INT NOT NULL,
	started_at BIGINT NOT NULL)`

// The queues of the keys scenario, besides sluice.QueueDefault: one whose
// keys are limited in how many of their jobs run at once, and one whose
// keys' jobs run in sequences.
const (
	KeyedQueue    = "keyed"
	SequenceQueue = "sequences"
)

// Queues returns the queues the suite's clients know, each worked by
// workers workers, or none for 0.
func Queues(workers int) map[string]sluice.QueueConfig {
	return map[string]sluice.QueueConfig{sluice.QueueDefault: {MaxWorkers: workers},
		KeyedQueue: {MaxWorkers: workers}, SequenceQueue: {MaxWorkers: workers}}
}

// Args are the arguments of a fault job.
type Args struct {
	// N numbers the job within its producer.
	N int `json:"n"`
}

// Topic implements sluice.JobArgs.
func (Args) Topic() string { return Topic }

// The topics of fault jobs: Args's, and KeyedArgs's.
const (
	Topic      = "fault"
	KeyedTopic = "fault-keyed"
)

// KeyedArgs are the arguments of a fault job of a second topic that names
// its key (sluice.KeyedArgs), so that jobs of one key can be of two
// topics, worked by different processes.
type KeyedArgs struct {
	// N numbers the job within its producer.
	N int `json:"n"`
	// Key is the job's key.
	Key string `json:"key"`
}

// Topic implements sluice.JobArgs.
func (KeyedArgs) Topic() string { return KeyedTopic }

// JobKey implements sluice.KeyedArgs.
func (a KeyedArgs) JobKey() string { return a.Key }

// Store is what the worker and the producer need of a database, whatever
// its transaction type.
type Store[TTx any] struct {
	// Begin begins a transaction.
	Begin func(ctx context.Context) (TTx, error)
	// Commit commits tx.
	Commit func(ctx context.Context, tx TTx) error
	// Rollback rolls tx back; after a commit it does nothing.
	Rollback func(ctx context.Context, tx TTx) error
	// Exec runs a statement in tx.
	Exec func(ctx context.Context, tx TTx, query string, args ...any) error
	// Placeholder is the driver's "$1, $2, $3" or "?, ?, ?".
	Placeholder string
	// WorkInTx makes a job's work happen inside its transaction, so that a
	// fault during the work leaves an open transaction behind. SQLite, whose
	// transactions hold the write lock, works before beginning.
	WorkInTx bool
}

// Worker works fault jobs: it waits Delay (or until its context ends),
// inserts the job's effect and acks the job in one transaction.
type Worker[TTx any] struct {
	sluice.WorkerDefaults[Args]
	Store *Store[TTx]
	Delay time.Duration
	// Attempts records each attempt's start in fault_attempts, committed
	// before its work begins.
	Attempts bool
}

// Work implements sluice.Worker.
func (w *Worker[TTx]) Work(ctx context.Context, job *sluice.Job[Args]) error {
	return w.work(ctx, job, job.JobRow)
}

// KeyedWorker works KeyedArgs jobs as its Worker works Args jobs.
type KeyedWorker[TTx any] struct {
	sluice.WorkerDefaults[KeyedArgs]
	Worker *Worker[TTx]
}

// Work implements sluice.Worker.
func (w *KeyedWorker[TTx]) Work(ctx context.Context, job *sluice.Job[KeyedArgs]) error {
	return w.Worker.work(ctx, job, job.JobRow)
}

// work works ref, whose row is job.
func (w *Worker[TTx]) work(ctx context.Context, ref sluice.JobRef, job *sluice.JobRow) error {
	start := time.Now().UnixMicro()
	if w.Attempts {
		if err := w.record(ctx, job, start); err != nil {
			return err
		}
	}
	if !w.Store.WorkInTx {
		if err := sleep(ctx, w.Delay); err != nil {
			return err
		}
	}
	tx, err := w.Store.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = w.Store.Rollback(context.WithoutCancel(ctx), tx) }()
	if w.Store.WorkInTx {
		if err := sleep(ctx, w.Delay); err != nil {
			return err
		}
	}
	if err := w.Store.Exec(ctx, tx, `INSERT INTO fault_effects (job_id, done_at, started_at) VALUES (`+w.Store.Placeholder+`)`,
		job.ID, time.Now().UnixMicro(), start); err != nil {
		return err
	}
	if err := sluice.ClientFromContext[TTx](ctx).Ack(ctx, tx, ref); err != nil {
		return err
	}
	return w.Store.Commit(ctx, tx)
}

// record inserts the attempt's start into fault_attempts in a
// transaction of its own.
func (w *Worker[TTx]) record(ctx context.Context, job *sluice.JobRow, start int64) error {
	tx, err := w.Store.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = w.Store.Rollback(context.WithoutCancel(ctx), tx) }()
	if err := w.Store.Exec(ctx, tx, `INSERT INTO fault_attempts (job_id, attempt, started_at) VALUES (`+w.Store.Placeholder+`)`,
		job.ID, job.Attempt, start); err != nil {
		return err
	}
	return w.Store.Commit(ctx, tx)
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// jobOptions gives each job retries enough for the faults it may meet:
// every backend killed or connection refused in the middle of an attempt
// costs that attempt, and a job whose retries are used up ends failed, which
// the suite counts as lost.
var jobOptions = &sluice.EnqueueOptions{MaxRetries: MaxRetries}

// MaxRetries is the retries every fault job is enqueued with.
const MaxRetries = 100

// Producer enqueues fault jobs in batches: most with EnqueueMany, every
// fourth batch with EnqueueTx in a transaction of its own.
type Producer struct {
	// Jobs is how many jobs to enqueue; 0 means until the context ends.
	Jobs int
	// Batch is how many jobs each batch holds.
	Batch int
	// Every spaces the batches; 0 enqueues as fast as the database allows.
	Every time.Duration
	// Committed is called with each job's ID once its batch committed.
	Committed func(id string)
}

// Produce enqueues jobs through c until p.Jobs are enqueued or ctx ends. A
// batch that fails is retried after a pause; it wrote nothing, or (if its
// commit's outcome is unknown) its jobs are simply never reported.
func Produce[TTx any](ctx context.Context, c *sluice.Client[TTx], st *Store[TTx], p Producer) error {
	var tick <-chan time.Time
	if p.Every > 0 {
		t := time.NewTicker(p.Every)
		defer t.Stop()
		tick = t.C
	}
	n := 0
	for round := 0; p.Jobs == 0 || n < p.Jobs; round++ {
		if tick != nil {
			select {
			case <-tick:
			case <-ctx.Done():
				return nil
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		size := p.Batch
		if p.Jobs > 0 {
			size = min(size, p.Jobs-n)
		}
		ids, err := enqueueBatch(ctx, c, st, n, size, round%4 == 3)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			fmt.Fprintln(os.Stderr, "produce:", err)
			_ = sleep(ctx, 50*time.Millisecond)
			continue
		}
		for _, id := range ids {
			p.Committed(id)
		}
		n += size
	}
	return nil
}

func enqueueBatch[TTx any](ctx context.Context, c *sluice.Client[TTx], st *Store[TTx], first, size int, inTx bool) ([]string, error) {
	ids := make([]string, 0, size)
	if !inTx {
		params := make([]sluice.EnqueueParams, size)
		for i := range params {
			params[i] = sluice.EnqueueParams{Args: Args{N: first + i}, Options: jobOptions}
		}
		res, err := c.EnqueueMany(ctx, params)
		if err != nil {
			return nil, err
		}
		for _, r := range res {
			ids = append(ids, r.Job.ID)
		}
		return ids, nil
	}
	tx, err := st.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = st.Rollback(context.WithoutCancel(ctx), tx) }()
	for i := range size {
		res, err := c.EnqueueTx(ctx, tx, Args{N: first + i}, jobOptions)
		if err != nil {
			return nil, err
		}
		ids = append(ids, res.Job.ID)
	}
	return ids, st.Commit(ctx, tx)
}

// The schedules of the schedules scenario: both enqueue a fault job every
// tick, the periodic one catching up once after downtime, the stored one
// skipping what it missed.
const (
	// PeriodicName names the periodic job; its jobs' unique keys start
	// with "periodic:" and this name.
	PeriodicName = "fault-periodic"
	// StoredName names the stored schedule; its jobs' unique keys start
	// with "schedule:" and this name.
	StoredName = "fault-stored"
)

// Periodic returns the periodic job firing every tick.
func Periodic(tick time.Duration) sluice.PeriodicJob {
	return sluice.PeriodicJob{Name: PeriodicName, Cron: "@every " + tick.String(), Args: Args{N: -1},
		Options: jobOptions, CatchUp: sluice.CatchUpOnce}
}

// CreateStored creates the stored schedule firing every tick, unless a
// process created it before.
func CreateStored[TTx any](ctx context.Context, c *sluice.Client[TTx], tick time.Duration) error {
	_, err := c.CreateSchedule(ctx, &sluice.Schedule{Name: StoredName, Cron: "@every " + tick.String(), Topic: Args{}.Topic(),
		Payload: []byte(`{"n": -2}`), MaxRetries: MaxRetries, CatchUp: sluice.CatchUpSkip})
	if errors.Is(err, sluice.ErrDuplicateSchedule) {
		return nil
	}
	return err
}
