// Package rawsys is the comparison's ceiling: a table of jobs worked by a
// batched claim and a batched completion in plain SQL, with no queue logic
// at all (no retries, no timeouts, no scheduling, no rescue of jobs whose
// worker died, no wake-up). Its throughput is the least work any queue on
// the same database must do per job, the figure sluice is measured against.
//
// It puts that behind harness.System as two systems: raw, which marks a
// finished job completed and keeps it (as sluice and River do), and
// raw-delete, which deletes it (as graphile-worker and backlite do). It
// imports no database library: each driver's child program gives it its
// SQL through DB.
package rawsys

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice/bench/harness"
)

// The systems' names.
const (
	// Update marks finished jobs completed and keeps them.
	Update = "raw"
	// Delete deletes finished jobs.
	Delete = "raw-delete"
)

// Settings are the ceiling's two knobs, the same in every scenario: the
// ceiling has no defaults of its own, so default_config measures it with
// the throughput settings too.
type Settings struct {
	// Batch is how many jobs one claim takes and one completion finishes.
	Batch int
	// Conns is how many connections claim and complete, each in a loop of
	// its own.
	Conns int
}

// Environment variables that override a driver's Settings in the child
// process, so that a sweep (cmd/rawsweep) can try other values through
// the comparison program unchanged.
const (
	BatchEnv = "SLUICE_RAW_BATCH"
	ConnsEnv = "SLUICE_RAW_CONNS"
)

// FromEnv returns def with the values BatchEnv and ConnsEnv give, if any.
func FromEnv(def Settings) (Settings, error) {
	s := def
	for _, v := range []struct {
		env string
		to  *int
	}{{BatchEnv, &s.Batch}, {ConnsEnv, &s.Conns}} {
		text := os.Getenv(v.env)
		if text == "" {
			continue
		}
		n, err := strconv.Atoi(text)
		if err != nil || n < 1 {
			return def, fmt.Errorf("%s=%q is not a positive number", v.env, text)
		}
		*v.to = n
	}
	return s, nil
}

// Remaining counts the jobs that are not finished, in either driver's
// table.
const Remaining = `SELECT count(*) FROM jobs WHERE state IN ('pending', 'running')`

// DB is one driver's side of the ceiling on one fresh database: a table
// jobs of id (ascending in insertion order), state ('pending', 'running'
// or 'completed') and args (the JSON {"n":N}), with an index of the
// pending jobs' IDs, as a real queue would have for its claims.
type DB interface {
	// Migrate creates the table and its index.
	Migrate(ctx context.Context) error
	// InsertFinished inserts n completed jobs.
	InsertFinished(ctx context.Context, n int) error
	// Insert inserts one pending job, committed (synchronously) when it
	// returns.
	Insert(ctx context.Context, args []byte) error
	// InsertMany inserts pending jobs with the database's fastest batch
	// insert.
	InsertMany(ctx context.Context, args [][]byte) error
	// Count runs a query of one number, such as Remaining.
	Count(ctx context.Context, query string) (int64, error)
	// Session opens a connection for a worker, with asynchronous commit
	// where the database has it; its completions delete jobs if del, else
	// mark them completed.
	Session(ctx context.Context, del bool) (Session, error)
	// Close releases the database.
	Close() error
}

// Session is one worker connection.
type Session interface {
	// Claim marks up to n pending jobs running, the lowest IDs first and
	// skipping those another session is claiming, in one committed
	// statement, and appends their IDs and args to ids and args.
	Claim(ctx context.Context, n int, ids []int64, args [][]byte) ([]int64, [][]byte, error)
	// Complete finishes the jobs ids in one committed statement.
	Complete(ctx context.Context, ids []int64) error
	// Close closes the connection.
	Close() error
}

// Factories returns the factories of raw and raw-delete on driver over the
// databases open opens, with the settings tuned unless the environment
// overrides them. Neither can measure latency: with no way to wake its
// workers, the ceiling's latency would be whatever poll interval it was
// given.
func Factories(driver string, tuned Settings, open func(context.Context, *harness.Spec) (DB, error)) map[string]harness.Factory {
	factory := func(del bool) harness.Factory {
		return func(ctx context.Context, spec *harness.Spec) (harness.System, error) {
			if spec.Kind == harness.KindLatency {
				return nil, fmt.Errorf("%s has no wake-up: %w", spec.System, harness.ErrUnsupported)
			}
			settings, err := FromEnv(tuned)
			if err != nil {
				return nil, err
			}
			db, err := open(ctx, spec)
			if err != nil {
				return nil, err
			}
			return &system{db: db, settings: settings, del: del}, nil
		}
	}
	return map[string]harness.Factory{
		Update + "/" + driver: factory(false),
		Delete + "/" + driver: factory(true),
	}
}

// jobArgs are every job's arguments.
type jobArgs struct {
	N int64 `json:"n"`
}

// idlePoll is how long a worker whose claim found nothing waits before the
// next: only the end of a burn-down gets there.
const idlePoll = time.Millisecond

type system struct {
	db       DB
	settings Settings
	del      bool
	work     func(int64)

	sessions []Session
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
	errs     []error // one per session, each written by its loop alone
}

func (s *system) Migrate(ctx context.Context) error { return s.db.Migrate(ctx) }

// InsertFinished inserts nothing for raw-delete: a queue that deletes what
// it finishes keeps no finished jobs.
func (s *system) InsertFinished(ctx context.Context, n int) error {
	if s.del {
		return nil
	}
	return s.db.InsertFinished(ctx, n)
}

func (s *system) Open(_ context.Context, _ bool, work func(int64)) error {
	s.work = work
	return nil
}

// Start opens every worker's connection, then starts the workers.
func (s *system) Start(ctx context.Context) error {
	for range s.settings.Conns {
		sess, err := s.db.Session(ctx, s.del)
		if err != nil {
			return err // Close closes those opened
		}
		s.sessions = append(s.sessions, sess)
	}
	s.stop, s.errs = make(chan struct{}), make([]error, len(s.sessions))
	for i, sess := range s.sessions {
		s.wg.Go(func() { s.errs[i] = s.loop(ctx, sess) })
	}
	return nil
}

// loop claims, works and completes batches until Stop; a batch it has
// claimed it always completes.
func (s *system) loop(ctx context.Context, sess Session) error {
	var ids []int64
	var args [][]byte
	idle := time.NewTimer(0)
	defer idle.Stop()
	for {
		select {
		case <-s.stop:
			return nil
		default:
		}
		var err error
		ids, args, err = sess.Claim(ctx, s.settings.Batch, ids[:0], args[:0])
		if err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		if len(ids) == 0 {
			idle.Reset(idlePoll)
			select {
			case <-s.stop:
				return nil
			case <-idle.C:
			}
			continue
		}
		for _, a := range args {
			var job jobArgs
			if err := json.Unmarshal(a, &job); err != nil {
				return fmt.Errorf("decode args %q: %w", a, err)
			}
			s.work(job.N)
		}
		if err := sess.Complete(ctx, ids); err != nil {
			return fmt.Errorf("complete: %w", err)
		}
	}
}

// Stop lets every loop complete the batch it holds and closes the
// sessions.
func (s *system) Stop(ctx context.Context) error {
	if s.stop == nil {
		return nil
	}
	s.stopOnce.Do(func() { close(s.stop) })
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	errs := s.errs
	for _, sess := range s.sessions {
		errs = append(errs, sess.Close())
	}
	s.sessions = nil
	return errors.Join(errs...)
}

func (s *system) Enqueue(ctx context.Context, n int64) error {
	args, err := json.Marshal(jobArgs{N: n})
	if err != nil {
		return err
	}
	return s.db.Insert(ctx, args)
}

func (s *system) EnqueueMany(ctx context.Context, first int64, size int) error {
	args := make([][]byte, size)
	for i := range args {
		var err error
		if args[i], err = json.Marshal(jobArgs{N: first + int64(i)}); err != nil {
			return err
		}
	}
	return s.db.InsertMany(ctx, args)
}

func (s *system) Remaining(ctx context.Context) (int64, error) { return s.db.Count(ctx, Remaining) }

func (s *system) Close() error {
	var errs []error
	for _, sess := range s.sessions {
		errs = append(errs, sess.Close())
	}
	return errors.Join(append(errs, s.db.Close())...)
}
