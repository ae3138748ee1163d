package sluicepb

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/dop251/goja"
	"github.com/dop251/goja_nodejs/buffer"
	"github.com/dop251/goja_nodejs/console"
	"github.com/dop251/goja_nodejs/process"
	"github.com/dop251/goja_nodejs/require"
	"github.com/pocketbase/pocketbase/plugins/jsvm"
	"github.com/pocketbase/pocketbase/tools/template"

	"github.com/sluicehq/sluice"
)

// DefaultJSConcurrency is how many JavaScript workers run at once when
// JSOptions.Concurrency is 0 or less.
const DefaultJSConcurrency = 4

// JSOptions configure the JavaScript side of Jobs (see JSConfig).
type JSOptions struct {
	// Concurrency is how many JavaScript jobs run at once, each on a
	// JavaScript runtime of the adapter's own; jobs past it wait for one
	// to free up. 0 (or less) means DefaultJSConcurrency.
	Concurrency int
}

// JSConfig returns cfg, a jsvm plugin configuration, with $jobs bound into
// every JavaScript runtime the plugin creates: the app's pb_hooks and
// migrations get $jobs.enqueue, enqueueTx, get, list, stats, requeue,
// cancel, retry, delete, ack and nack, the builders $jobs.workflow and
// $jobs.batch with the calls on workflows and batches (getWorkflow,
// listWorkflows, cancelWorkflow, retryWorkflow, and their batch twins with
// addToBatch, addToBatchTx and closeBatch), and pb_hooks register workers
// with $jobs.work. cfg.OnInit, the app author's own hook, still runs, after
// the binding, and runs too for the runtimes that work JavaScript jobs.
// Register the plugin with the result, after Register:
//
//	jobs, err := sluicepb.Register(app, &sluicepb.Config{})
//	...
//	jsvm.MustRegister(app, jobs.JSConfig(jsvm.Config{HooksWatch: true}, nil))
//
// opts may be nil.
func (j *Jobs) JSConfig(cfg jsvm.Config, opts *JSOptions) jsvm.Config {
	if opts == nil {
		opts = &JSOptions{}
	}
	n := opts.Concurrency
	if n <= 0 {
		n = DefaultJSConcurrency
	}
	js := &jsHost{
		jobs:    j,
		author:  cfg,
		slots:   make(chan struct{}, n),
		idle:    make(chan *jsVM, n),
		running: make(map[string]runningJob),
	}
	out := cfg
	out.OnInit = func(vm *goja.Runtime) {
		js.bind(vm)
		if cfg.OnInit != nil {
			cfg.OnInit(vm)
		}
	}
	return out
}

// jsHost is the JavaScript side of a Jobs: the binding of $jobs, and the
// pool of runtimes that work JavaScript jobs. A goja runtime is not safe
// for concurrent use, so each job borrows one for its whole run.
type jsHost struct {
	jobs   *Jobs
	author jsvm.Config

	// slots bounds the runtimes in use; idle holds those not in use.
	slots chan struct{}
	idle  chan *jsVM

	requireOnce sync.Once
	registry    *require.Registry
	templates   *template.Registry

	mu      sync.Mutex
	running map[string]runningJob // jobs being worked, by ID, for $jobs.ack
}

// acquire returns a runtime to run one job on, once fewer than the
// concurrency limit are in use, or ctx's error.
func (h *jsHost) acquire(ctx context.Context) (*jsVM, error) {
	select {
	case h.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-h.idle:
		return r, nil
	default:
		return h.newRuntime(), nil
	}
}

// release gives r back to the pool.
func (h *jsHost) release(r *jsVM) {
	h.idle <- r
	<-h.slots
}

// newRuntime returns a runtime bound as the jsvm plugin binds the
// runtimes of pb_hooks, with $jobs and the author's OnInit, and the
// helpers of the jobs it will run.
func (h *jsHost) newRuntime() *jsVM {
	h.requireOnce.Do(func() {
		h.registry = new(require.Registry)
		h.templates = template.NewRegistry()
	})
	vm := goja.New()
	h.registry.Enable(vm)
	console.Enable(vm)
	process.Enable(vm)
	buffer.Enable(vm)
	jsvm.BindCore(vm)
	jsvm.BindDbx(vm)
	jsvm.BindSecurity(vm)
	jsvm.BindOS(vm)
	jsvm.BindFilepath(vm)
	jsvm.BindHTTP(vm)
	jsvm.BindFilesystem(vm)
	jsvm.BindForms(vm)
	jsvm.BindMails(vm)
	jsvm.BindApis(vm)
	vm.Set("$app", h.jobs.app)
	vm.Set("$template", h.templates)
	hooks := h.author.HooksDir
	if hooks == "" {
		hooks = filepath.Join(h.jobs.app.DataDir(), "../pb_hooks")
	}
	if abs, err := filepath.Abs(hooks); err == nil {
		vm.Set("__hooks", abs)
	}
	h.bind(vm)
	if h.author.OnInit != nil {
		h.author.OnInit(vm)
	}
	return newJSVM(vm)
}

// throw panics with err as a JavaScript exception in vm: goja turns the
// panic of a Go function called from JavaScript into a throw.
func throw(vm *goja.Runtime, op string, err error) {
	panic(vm.NewGoError(fmt.Errorf("$jobs.%s: %w", op, err)))
}

// toJSON returns v, a JavaScript value, as JSON; undefined is nil.
func toJSON(vm *goja.Runtime, v goja.Value) ([]byte, error) {
	if v == nil || goja.IsUndefined(v) {
		return nil, nil
	}
	stringify, _ := goja.AssertFunction(vm.Get("JSON").ToObject(vm).Get("stringify"))
	s, err := stringify(goja.Undefined(), v)
	if err != nil {
		return nil, err
	}
	if goja.IsUndefined(s) {
		return nil, errors.New("value has no JSON form")
	}
	return []byte(s.String()), nil
}

// fromJSON returns v marshalled to JSON and parsed in vm, so that
// JavaScript gets plain objects, arrays and strings.
func fromJSON(vm *goja.Runtime, v any) goja.Value {
	b, err := json.Marshal(v)
	if err != nil {
		panic(vm.NewGoError(err))
	}
	parse, _ := goja.AssertFunction(vm.Get("JSON").ToObject(vm).Get("parse"))
	out, err := parse(goja.Undefined(), vm.ToValue(string(b)))
	if err != nil {
		panic(err)
	}
	return out
}

// decodeJS decodes v, a JavaScript object of options, into dst, refusing
// members dst does not know.
func decodeJS(vm *goja.Runtime, v goja.Value, dst any) error {
	b, err := toJSON(vm, v)
	if err != nil || b == nil || string(b) == "null" {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidJSOptions, err)
	}
	return nil
}

// ErrInvalidJSOptions is wrapped by the error $jobs throws for an options
// or filter object it cannot read: an unknown member, a value of the wrong
// type, a malformed time or duration.
var ErrInvalidJSOptions = errors.New("sluicepb: invalid options")

// AddRawWorker registers worker for topic, a topic with no Go argument
// type, as sluice.AddRawWorker does: its jobs reach the worker as
// sluice.RawArgs holding the payload's JSON. JavaScript workers are
// registered this way. It returns an error matching ErrClientCreated once
// the client exists, and sluice's errors for an empty topic or a topic
// that already has a worker.
func AddRawWorker(j *Jobs, topic string, worker sluice.Worker[sluice.RawArgs]) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.client != nil {
		return fmt.Errorf("sluicepb: add worker %q: %w", topic, ErrClientCreated)
	}
	return sluice.AddRawWorkerSafely(j.workers, topic, worker)
}

// runningJob is a job a JavaScript worker works, and the runtime it runs
// on: only that runtime may ack or nack it.
type runningJob struct {
	job *sluice.Job[sluice.RawArgs]
	vm  *goja.Runtime
}
