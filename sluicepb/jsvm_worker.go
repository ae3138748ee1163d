package sluicepb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/dop251/goja"

	"github.com/sluicehq/sluice"
)

// jsWorkOptions are the options of $jobs.work.
type jsWorkOptions struct {
	// MaxRetries is the retries of the topic's jobs enqueued without
	// maxRetries; 0 none. Absent means the Config's.
	MaxRetries *int `json:"maxRetries"`
	// Timeout is how long a job may run before the handler is interrupted.
	// Absent means the Config's.
	Timeout *jsDuration `json:"timeout"`
}

// work registers the JavaScript worker of $jobs.work(topic, handler,
// options). The handler is compiled from its source, as pb_hooks' own
// handlers are: it runs on a runtime of the pool, not the one that
// registered it, so it sees globals but not the variables of the file
// around it.
func (h *jsHost) work(vm *goja.Runtime, args []goja.Value) error {
	if len(args) < 2 {
		return errors.New("$jobs.work(topic, handler, options?) takes a topic and a handler")
	}
	topic := args[0].String()
	if _, ok := goja.AssertFunction(args[1]); !ok {
		return fmt.Errorf("work %q: the handler is not a function", topic)
	}
	prog, err := goja.Compile(scriptPath(), "{("+args[1].String()+").apply(undefined, __args)}", true)
	if err != nil {
		return fmt.Errorf("work %q: %w", topic, err)
	}
	var o jsWorkOptions
	if len(args) > 2 {
		if err := decodeJS(vm, args[2], &o); err != nil {
			return fmt.Errorf("work %q: %w", topic, err)
		}
	}
	w := &jsWorker{h: h, prog: prog}
	// Absent, the worker's default: the Config's.
	if w.maxRetries, err = maxRetriesOption(o.MaxRetries, w.WorkerDefaults.MaxRetries()); err != nil {
		return fmt.Errorf("work %q: %w", topic, err)
	}
	if o.Timeout != nil {
		w.timeout = time.Duration(*o.Timeout)
		if w.timeout <= 0 {
			return fmt.Errorf("work %q: %w: timeout: %v is not positive", topic, ErrInvalidJSOptions, w.timeout)
		}
	}
	return AddRawWorker(h.jobs, topic, w)
}

// scriptPath is the file name handlers are compiled under, as the jsvm
// plugin compiles pb_hooks' handlers: a file in the working directory, so
// that require() finds the node_modules folders above it.
func scriptPath() string {
	cwd, err := os.Getwd()
	if err != nil {
		return "pb.js"
	}
	return filepath.Join(cwd, "pb.js")
}

// jsWorker works the jobs of one topic with a JavaScript handler.
type jsWorker struct {
	sluice.WorkerDefaults[sluice.RawArgs]
	h          *jsHost
	prog       *goja.Program
	maxRetries int
	timeout    time.Duration
}

// MaxRetries returns the retries of $jobs.work's options.
func (w *jsWorker) MaxRetries() int { return w.maxRetries }

// Timeout returns the timeout of $jobs.work's options.
func (w *jsWorker) Timeout(*sluice.Job[sluice.RawArgs]) time.Duration { return w.timeout }

// Work runs the handler with the job as {id, topic, payload, attempt, ...}
// (the job as $jobs.get returns it) on a runtime of the pool. A throw, or
// a returned promise that rejects, is the job's error; its message is
// what the job's errors record. A value returned (or a promise's value)
// is stored as the job's result. When ctx ends the handler is
// interrupted.
func (w *jsWorker) Work(ctx context.Context, job *sluice.Job[sluice.RawArgs]) error {
	r, err := w.h.acquire(ctx)
	if err != nil {
		return err
	}
	defer w.h.release(r)
	vm := r.vm
	r.ctx = ctx
	defer func() { r.ctx = nil }()

	w.h.mu.Lock()
	w.h.running[job.ID] = runningJob{job: job, vm: vm}
	w.h.mu.Unlock()
	defer func() {
		w.h.mu.Lock()
		delete(w.h.running, job.ID)
		w.h.mu.Unlock()
	}()

	interrupted := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		vm.Interrupt(ctx.Err())
		close(interrupted)
	})
	defer func() {
		if !stop() {
			<-interrupted
			vm.ClearInterrupt()
		}
	}()

	vm.Set("__args", []any{r.jobObject(job)})
	res, err := vm.RunProgram(w.prog)
	vm.Set("__args", goja.Undefined())
	if err != nil {
		return jsError(ctx, err)
	}
	val, err := settled(res)
	if err != nil || val == nil || goja.IsUndefined(val) || goja.IsNull(val) {
		return err
	}
	b, err := toJSON(vm, val)
	if err != nil {
		return fmt.Errorf("the handler's result: %w", err)
	}
	return sluice.SetResult(ctx, json.RawMessage(b))
}

// jsVM is a runtime of the pool, with the helpers of the job it runs
// (made once, as making functions is a good part of a job's cost).
type jsVM struct {
	vm *goja.Runtime
	// ctx is the context of the job running, nil between jobs.
	ctx                    context.Context
	reportProgress, logger goja.Value
}

func newJSVM(vm *goja.Runtime) *jsVM {
	r := &jsVM{vm: vm}
	job := func(op string) context.Context {
		if r.ctx == nil {
			panic(vm.NewGoError(fmt.Errorf("%s: %w", op, sluice.ErrNotJobContext)))
		}
		return r.ctx
	}
	r.reportProgress = vm.ToValue(func(call goja.FunctionCall) goja.Value {
		ctx := job("job.reportProgress")
		msg := ""
		if m := call.Argument(1); !goja.IsUndefined(m) && !goja.IsNull(m) {
			msg = m.String()
		}
		if err := sluice.ReportProgress(ctx, call.Argument(0).ToFloat(), msg); err != nil {
			panic(vm.NewGoError(fmt.Errorf("job.reportProgress: %w", err)))
		}
		return goja.Undefined()
	})
	logger := vm.NewObject()
	for name, level := range map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError} {
		err := logger.Set(name, func(call goja.FunctionCall) goja.Value {
			ctx := job("job.logger." + name)
			var attrs []any
			if a, ok := call.Argument(1).(*goja.Object); ok {
				m, _ := a.Export().(map[string]any)
				keys := make([]string, 0, len(m))
				for k := range m {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					attrs = append(attrs, slog.Any(k, m[k]))
				}
			}
			sluice.Logger(ctx).Log(ctx, level, call.Argument(0).String(), attrs...)
			return goja.Undefined()
		})
		if err != nil {
			panic(err)
		}
	}
	r.logger = logger
	return r
}

// jobObject returns the job a handler gets: the job as $jobs.get returns
// it, with reportProgress(percent, message) to report its progress and
// logger (debug, info, warn, error: (message, attrs)) to log records kept
// with it, as sluice.ReportProgress and sluice.Logger do in Go.
func (r *jsVM) jobObject(job *sluice.Job[sluice.RawArgs]) goja.Value {
	v := fromJSON(r.vm, jsJobOf(job.JobRow))
	obj := v.ToObject(r.vm)
	if err := obj.Set("reportProgress", r.reportProgress); err != nil {
		panic(err)
	}
	if err := obj.Set("logger", r.logger); err != nil {
		panic(err)
	}
	return v
}

// settled returns the value of a handler's result, that of a fulfilled
// promise, or its error: a rejected promise's reason, a promise still
// pending (an async handler waiting on something that cannot finish
// outside an event loop), or a returned Go error.
func settled(res goja.Value) (goja.Value, error) {
	if res == nil {
		return nil, nil
	}
	switch v := res.Export().(type) {
	case *goja.Promise:
		switch v.State() {
		case goja.PromiseStateRejected:
			return nil, thrown(v.Result())
		case goja.PromiseStatePending:
			return nil, errors.New("the handler returned a promise that did not settle: JavaScript workers run without an event loop")
		}
		return v.Result(), nil
	case error:
		return nil, v
	}
	return res, nil
}

// jsError returns the error of a handler's run: what it threw, or, when
// it was interrupted, ctx's error.
func jsError(ctx context.Context, err error) error {
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: %w", context.Cause(ctx))
		}
		return err
	}
	var ex *goja.Exception
	if errors.As(err, &ex) {
		return thrown(ex.Value())
	}
	return err
}

// thrown returns the error of a value JavaScript threw: a Go error as it
// is, an Error object as its message, anything else as its string.
func thrown(v goja.Value) error {
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return errors.New("the handler threw " + fmt.Sprint(v))
	}
	switch e := v.Export().(type) {
	case error:
		return e
	case map[string]any: // a GoError
		if err, ok := e["value"].(error); ok {
			return err
		}
	}
	if obj, ok := v.(*goja.Object); ok {
		if m := obj.Get("message"); m != nil && !goja.IsUndefined(m) && m.String() != "" {
			return errors.New(m.String())
		}
	}
	return errors.New(v.String())
}
