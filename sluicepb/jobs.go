package sluicepb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/sluiceweb"
)

var (
	// ErrNotInTransaction is returned by EnqueueTx, Ack and Nack when the
	// app passed is not the txApp of app.RunInTransaction.
	ErrNotInTransaction = errors.New("sluicepb: app is not in a transaction")

	// ErrNotBootstrapped is returned when jobs are used before the app
	// has been bootstrapped: data.db is not open yet.
	ErrNotBootstrapped = errors.New("sluicepb: app not bootstrapped")

	// ErrClientCreated is returned by AddWorker once the client has been
	// created (when the app serves, or at the first enqueue or Client
	// call): workers are fixed from then on.
	ErrClientCreated = errors.New("sluicepb: client already created")
)

// migrateTimeout bounds the migration run at bootstrap.
const migrateTimeout = time.Minute

// Jobs is the job queue of one PocketBase app: a sluice client over the
// app's data.db. Register returns it; it is safe for concurrent use.
type Jobs struct {
	app     core.App
	cfg     *Config
	workers *sluice.Workers

	mu      sync.Mutex
	drv     *pbDriver
	client  *sluice.Client[*sql.Tx]
	started bool
	web     *sluiceweb.Handler
	// gate holds claims while the app serves writing requests; nil when
	// Config.YieldToRequests is negative.
	gate *requestGate
}

// Register adds a job queue to app and returns it. It binds the app's
// hooks and touches nothing else until they run:
//
//   - at bootstrap (for every command, after the app's own bootstrap), it
//     creates or updates the jobs table and its companions in data.db;
//   - when the app serves, it starts the workers added with AddWorker and,
//     unless cfg.DisableHTTP, serves the API under /api/jobs and the Jobs
//     panel of the admin UI;
//   - at termination, before the database closes, it stops the workers,
//     waiting up to cfg.ShutdownTimeout for running jobs.
//
// The queue uses PocketBase's own connections to data.db: writes go
// through its single write connection, reads through its pool. Register
// may also be called on an app that is already bootstrapped. A nil cfg
// means the defaults; an invalid one returns an error matching
// sluice.ErrInvalidConfig.
func Register(app core.App, cfg *Config) (*Jobs, error) {
	if app == nil {
		return nil, &ConfigError{Field: "app", Reason: "must not be nil"}
	}
	full, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	j := &Jobs{app: app, cfg: full, workers: sluice.NewWorkers()}
	if full.YieldToRequests > 0 {
		j.gate = newRequestGate(full.YieldToRequests, full.Table)
	}
	app.OnBootstrap().BindFunc(func(e *core.BootstrapEvent) error {
		if err := e.Next(); err != nil {
			return err
		}
		return j.open(e.App)
	})
	app.OnServe().BindFunc(j.serve)
	// The workers drain before PocketBase's own graceful shutdown
	// (priority -9999), which lets a restarting process exit 3 s after it
	// starts: a drain that began later could be cut short, and its jobs
	// run again.
	app.OnTerminate().Bind(&hook.Handler[*core.TerminateEvent]{
		Id: "sluicepbStop_" + full.Table,
		Func: func(e *core.TerminateEvent) error {
			j.stop()
			return e.Next()
		},
		Priority: -10000,
	})
	if app.IsBootstrapped() {
		if err := j.open(app); err != nil {
			return nil, err
		}
	}
	return j, nil
}

// open makes the driver over app's pools and migrates the schema. It runs
// at every bootstrap: a bootstrap after a restore opens new pools.
func (j *Jobs) open(app core.App) error {
	write, ok1 := app.NonconcurrentDB().(*dbx.DB)
	read, ok2 := app.ConcurrentDB().(*dbx.DB)
	if !ok1 || !ok2 {
		return errors.New("sluicepb: open: data.db is not a *dbx.DB")
	}
	opts := []sqlitedriver.Option{sqlitedriver.WithTable(j.cfg.Table), sqlitedriver.WithReadDB(read.DB())}
	if j.gate != nil {
		opts = append(opts, sqlitedriver.WithClaimGate(j.gate.wait))
	}
	drv := &pbDriver{Driver: sqlitedriver.New(write.DB(), opts...)}
	ctx, cancel := context.WithTimeout(context.Background(), migrateTimeout)
	defer cancel()
	if err := drv.Migrate(ctx); err != nil {
		return fmt.Errorf("sluicepb: migrate %s: %w", j.cfg.Table, err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.drv = drv
	j.client = nil
	return nil
}

// getClient returns the client, creating it on first use.
func (j *Jobs) getClient() (*sluice.Client[*sql.Tx], error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.clientLocked()
}

func (j *Jobs) clientLocked() (*sluice.Client[*sql.Tx], error) {
	if j.client != nil {
		return j.client, nil
	}
	if j.drv == nil {
		return nil, ErrNotBootstrapped
	}
	sc := j.cfg.sluiceConfig(j.workers)
	if sc.Logger == nil {
		sc.Logger = j.app.Logger()
	}
	c, err := sluice.NewClient(j.drv, sc)
	if err != nil {
		return nil, fmt.Errorf("sluicepb: %w", err)
	}
	j.client = c
	return c, nil
}

// Client returns the sluice client behind the queue, for its whole
// operations API (List, Stats, Cancel, Requeue, schedules, Subscribe ...).
// Its transaction type is *sql.Tx; use Jobs.EnqueueTx, Ack and Nack with a
// PocketBase txApp, or Tx to get the *sql.Tx of one. The client is created
// on the first call (or when the app serves): add workers before. It
// returns an error matching ErrNotBootstrapped before the app's bootstrap.
func (j *Jobs) Client() (*sluice.Client[*sql.Tx], error) {
	return j.getClient()
}

// Workers returns the registry of the queue's workers, for registration
// functions of the sluice package. Add workers before the client is
// created; AddWorker checks this, the registry alone cannot.
func (j *Jobs) Workers() *sluice.Workers { return j.workers }

// AddWorker registers worker for the topic of T. It returns an error
// matching ErrClientCreated once the client exists (add workers before the
// app serves and before the first enqueue), and sluice's errors for an
// empty topic or a topic that already has a worker.
func AddWorker[T sluice.JobArgs](j *Jobs, worker sluice.Worker[T]) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.client != nil {
		var zero T
		return fmt.Errorf("sluicepb: add worker %q: %w", zero.Topic(), ErrClientCreated)
	}
	return sluice.AddWorkerSafely(j.workers, worker)
}

// Enqueue enqueues one job on its own, outside any transaction: it is
// committed when Enqueue returns. Inside app.RunInTransaction use
// EnqueueTx with the txApp: Enqueue would wait for the write connection
// the transaction holds.
func (j *Jobs) Enqueue(ctx context.Context, args sluice.JobArgs, opts *sluice.EnqueueOptions) (*sluice.EnqueueResult, error) {
	c, err := j.getClient()
	if err != nil {
		return nil, err
	}
	return c.Enqueue(ctx, args, opts)
}

// EnqueueTx enqueues one job in the transaction of txApp, the app that
// app.RunInTransaction hands its function: the job exists if and only if
// the transaction commits, and workers start it as soon as it does. An app
// that is not in a transaction returns an error matching
// ErrNotInTransaction and writes nothing.
func (j *Jobs) EnqueueTx(ctx context.Context, txApp core.App, args sluice.JobArgs, opts *sluice.EnqueueOptions) (*sluice.EnqueueResult, error) {
	tx, err := Tx(txApp)
	if err != nil {
		return nil, fmt.Errorf("sluicepb: enqueue: %w", err)
	}
	c, err := j.getClient()
	if err != nil {
		return nil, err
	}
	res, err := c.EnqueueTx(ctx, tx, args, opts)
	if err != nil {
		return nil, err
	}
	if !res.Duplicate {
		j.wakeOnCommit(txApp, res.Job.Queue)
	}
	return res, nil
}

// EnqueueManyTx is EnqueueTx for many jobs at once, all or none.
func (j *Jobs) EnqueueManyTx(ctx context.Context, txApp core.App, params []sluice.EnqueueParams) ([]sluice.EnqueueResult, error) {
	tx, err := Tx(txApp)
	if err != nil {
		return nil, fmt.Errorf("sluicepb: enqueue many: %w", err)
	}
	c, err := j.getClient()
	if err != nil {
		return nil, err
	}
	res, err := c.EnqueueManyTx(ctx, tx, params)
	if err != nil {
		return nil, err
	}
	var queues []string
	for _, r := range res {
		if !r.Duplicate {
			queues = append(queues, r.Job.Queue)
		}
	}
	if len(queues) > 0 {
		j.wakeOnCommit(txApp, queues...)
	}
	return res, nil
}

// wakeOnCommit wakes the workers of queues once txApp's transaction has
// committed.
func (j *Jobs) wakeOnCommit(txApp core.App, queues ...string) {
	j.mu.Lock()
	drv := j.drv
	j.mu.Unlock()
	txApp.TxInfo().OnComplete(func(txErr error) error {
		if txErr == nil {
			drv.committed(queues)
		}
		return nil
	})
}

// Ack completes job inside txApp's transaction, with the writes the worker
// made through txApp: both commit or neither does. It is fenced as
// sluice's Client.Ack is: an error matching sluice.ErrLeaseLost means this
// worker no longer holds the job and the transaction must roll back. An
// app that is not in a transaction returns an error matching
// ErrNotInTransaction.
func (j *Jobs) Ack(ctx context.Context, txApp core.App, job sluice.JobRef) error {
	tx, c, err := j.txClient(txApp, "ack")
	if err != nil {
		return err
	}
	return c.Ack(ctx, tx, job)
}

// Nack records jobErr as the failure of job's attempt inside txApp's
// transaction, and schedules its retry or fails it, as sluice's
// Client.Nack does.
func (j *Jobs) Nack(ctx context.Context, txApp core.App, job sluice.JobRef, jobErr error) error {
	tx, c, err := j.txClient(txApp, "nack")
	if err != nil {
		return err
	}
	return c.Nack(ctx, tx, job, jobErr)
}

func (j *Jobs) txClient(txApp core.App, op string) (*sql.Tx, *sluice.Client[*sql.Tx], error) {
	tx, err := Tx(txApp)
	if err != nil {
		return nil, nil, fmt.Errorf("sluicepb: %s: %w", op, err)
	}
	c, err := j.getClient()
	if err != nil {
		return nil, nil, err
	}
	return tx, c, nil
}

// Tx returns the *sql.Tx of txApp's transaction on data.db, for the
// client's other Tx methods (CancelTx, RequeueTx, GetTx ...). An app that
// is not in a transaction on data.db returns an error matching
// ErrNotInTransaction.
func Tx(txApp core.App) (*sql.Tx, error) {
	if txApp == nil || !txApp.IsTransactional() {
		return nil, ErrNotInTransaction
	}
	dtx, ok := txApp.NonconcurrentDB().(*dbx.Tx)
	if !ok {
		return nil, ErrNotInTransaction // a transaction on auxiliary.db
	}
	b, ok := dtx.Builder.(interface{ Executor() dbx.Executor })
	if !ok {
		return nil, fmt.Errorf("%w: no executor in %T", ErrNotInTransaction, dtx.Builder)
	}
	tx, ok := b.Executor().(*sql.Tx)
	if !ok {
		return nil, fmt.Errorf("%w: executor is a %T", ErrNotInTransaction, b.Executor())
	}
	return tx, nil
}

// serve starts the workers and mounts the HTTP API when the app serves.
func (j *Jobs) serve(e *core.ServeEvent) error {
	c, err := j.getClient()
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(c.Topics()) > 0 && !j.started {
		if err := c.Start(context.Background()); err != nil {
			return fmt.Errorf("sluicepb: start: %w", err)
		}
		j.started = true
	}
	if j.gate != nil {
		e.Router.Bind(j.gate.handler())
	}
	if !j.cfg.DisableHTTP {
		if err := j.mount(e, c); err != nil {
			return err
		}
	}
	return e.Next()
}

// stop ends the event streams and stops the workers, waiting up to the
// shutdown timeout for running jobs.
func (j *Jobs) stop() {
	j.mu.Lock()
	c, started, web := j.client, j.started, j.web
	j.started = false
	j.mu.Unlock()
	if web != nil {
		web.Close()
	}
	if c == nil || !started {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), j.cfg.ShutdownTimeout)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		j.app.Logger().Warn("sluicepb: jobs still running at shutdown were handed back", "error", err)
	}
}
