package sluice

import (
	"context"
	"fmt"
)

// WorkMiddleware wraps the work of jobs: Work is called with the job's
// context and row, and next runs the rest of the chain and, at its end,
// the worker. A middleware may change the context it passes on, act
// before and after, and return an error of its own or the one next
// returned (which decides the job's outcome as a worker's error does). It
// must call next at most once.
//
// Global middleware is set in Config.WorkMiddleware; a worker adds its own
// by having a method Middleware() []WorkMiddleware (WorkerDefaults has one
// returning none). The Config's come first, outermost.
type WorkMiddleware interface {
	Work(ctx context.Context, job *JobRow, next func(ctx context.Context) error) error
}

// WorkMiddlewareFunc makes a function a WorkMiddleware.
type WorkMiddlewareFunc func(ctx context.Context, job *JobRow, next func(ctx context.Context) error) error

// Work implements WorkMiddleware.
func (f WorkMiddlewareFunc) Work(ctx context.Context, job *JobRow, next func(ctx context.Context) error) error {
	return f(ctx, job, next)
}

// EnqueueJob is one job of an enqueue as enqueue middleware sees it,
// before anything is checked or written.
type EnqueueJob struct {
	// Args are the job's arguments.
	Args JobArgs
	// Topic is Args.Topic().
	Topic string
	// Options are the job's options: a copy, with a Tags slice and a
	// Metadata map of its own, that middleware may change (to add
	// metadata, say). They are checked after the middleware has run.
	Options *EnqueueOptions
	// InTx is true when the job is enqueued in the caller's transaction.
	InTx bool
}

// EnqueueMiddleware wraps enqueues: Enqueue is called with the jobs of one
// Enqueue, EnqueueTx, EnqueueMany or EnqueueManyTx call, and next checks
// and inserts them (after the rest of the chain) and returns their
// results. A middleware may change the jobs' options, act before and
// after, or refuse the enqueue by returning an error without calling
// next: nothing is written, and the enqueue returns the error, wrapped. It
// must call next at most once. Set it in Config.EnqueueMiddleware.
type EnqueueMiddleware interface {
	Enqueue(ctx context.Context, jobs []*EnqueueJob, next func(ctx context.Context) ([]EnqueueResult, error)) ([]EnqueueResult, error)
}

// EnqueueMiddlewareFunc makes a function an EnqueueMiddleware.
type EnqueueMiddlewareFunc func(ctx context.Context, jobs []*EnqueueJob,
	next func(ctx context.Context) ([]EnqueueResult, error)) ([]EnqueueResult, error)

// Enqueue implements EnqueueMiddleware.
func (f EnqueueMiddlewareFunc) Enqueue(ctx context.Context, jobs []*EnqueueJob,
	next func(ctx context.Context) ([]EnqueueResult, error)) ([]EnqueueResult, error) {
	return f(ctx, jobs, next)
}

// workerMiddleware is implemented by a worker with middleware of its own.
type workerMiddleware interface {
	Middleware() []WorkMiddleware
}

// wrapWork returns work wrapped in mws, the first outermost.
func wrapWork(mws []WorkMiddleware, job *JobRow, work func(ctx context.Context) error) func(ctx context.Context) error {
	for i := len(mws) - 1; i >= 0; i-- {
		mw, next := mws[i], work
		work = func(ctx context.Context) error { return mw.Work(ctx, job, next) }
	}
	return work
}

// enqueueThrough runs params through the client's enqueue middleware,
// whose innermost step is insert with the jobs as the middleware left
// them.
func (c *Client[TTx]) enqueueThrough(ctx context.Context, inTx bool, params []EnqueueParams,
	insert func(ctx context.Context, params []EnqueueParams) ([]EnqueueResult, error)) ([]EnqueueResult, error) {
	jobs := make([]*EnqueueJob, len(params))
	for i, p := range params {
		jobs[i] = &EnqueueJob{Args: p.Args, Topic: topicOf(p.Args), Options: cloneOptions(p.Options), InTx: inTx}
	}
	called := false
	next := func(ctx context.Context) ([]EnqueueResult, error) {
		called = true
		out := make([]EnqueueParams, len(jobs))
		for i, j := range jobs {
			out[i] = EnqueueParams{Args: j.Args, Options: j.Options}
		}
		return insert(ctx, out)
	}
	mws := c.cfg.EnqueueMiddleware
	for i := len(mws) - 1; i >= 0; i-- {
		mw, inner := mws[i], next
		next = func(ctx context.Context) ([]EnqueueResult, error) { return mw.Enqueue(ctx, jobs, inner) }
	}
	res, err := next(ctx)
	if err != nil && !called {
		return nil, fmt.Errorf("enqueue %s: refused by middleware: %w", enqueueName(jobs), err)
	}
	return res, err
}

// enqueueName names the jobs of an enqueue in its errors.
func enqueueName(jobs []*EnqueueJob) string {
	if len(jobs) == 1 {
		return jobs[0].Topic
	}
	return fmt.Sprintf("%d jobs", len(jobs))
}
