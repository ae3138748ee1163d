package sluicepb

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/dop251/goja"
	"github.com/pocketbase/pocketbase/core"

	"github.com/sluicehq/sluice"
)

// bindFunc sets one function of $jobs.
type bindFunc func(name string, f func(ctx context.Context, call goja.FunctionCall) goja.Value)

// bindGroups sets the functions of $jobs for workflows and batches: the
// builders $jobs.workflow and $jobs.batch, and the calls on one enqueued.
func (h *jsHost) bindGroups(vm *goja.Runtime, set bindFunc) {
	set("workflow", func(_ context.Context, call goja.FunctionCall) goja.Value {
		return h.workflowBuilder(vm, optionalString(vm, "workflow", "the name", call.Argument(0)))
	})
	set("batch", func(_ context.Context, call goja.FunctionCall) goja.Value {
		return h.batchBuilder(vm, optionalString(vm, "batch", "the name", call.Argument(0)))
	})
	type client = sluice.Client[*sql.Tx]
	for name, get := range map[string]func(*client, context.Context, string) (*sluice.Group, error){
		"getWorkflow": (*client).GetWorkflow, "getBatch": (*client).GetBatch, "closeBatch": (*client).CloseBatch,
	} {
		set(name, func(ctx context.Context, call goja.FunctionCall) goja.Value {
			id := stringArg(vm, name, "the ID", call.Argument(0))
			g, err := get(h.client(vm, name), ctx, id)
			if err != nil {
				throw(vm, name, err)
			}
			return fromJSON(vm, jsGroupOf(g))
		})
	}
	for name, list := range map[string]func(*client, context.Context, *sluice.GroupFilter) (*sluice.GroupList, error){
		"listWorkflows": (*client).ListWorkflows, "listBatches": (*client).ListBatches,
	} {
		set(name, func(ctx context.Context, call goja.FunctionCall) goja.Value {
			var f jsGroupFilter
			if err := decodeJS(vm, call.Argument(0), &f); err != nil {
				throw(vm, name, err)
			}
			res, err := list(h.client(vm, name), ctx, f.filter())
			if err != nil {
				throw(vm, name, err)
			}
			return fromJSON(vm, res)
		})
	}
	for name, act := range map[string]func(*client, context.Context, string) ([]*sluice.JobRow, error){
		"cancelWorkflow": (*client).CancelWorkflow, "retryWorkflow": (*client).RetryWorkflow,
		"cancelBatch": (*client).CancelBatch, "retryBatch": (*client).RetryBatch,
	} {
		set(name, func(ctx context.Context, call goja.FunctionCall) goja.Value {
			id := stringArg(vm, name, "the ID", call.Argument(0))
			rows, err := act(h.client(vm, name), ctx, id)
			if err != nil {
				throw(vm, name, err)
			}
			return fromJSON(vm, jsJobsJSON{Items: jsJobsOf(rows), Count: len(rows)})
		})
	}
	set("addToBatch", func(ctx context.Context, call goja.FunctionCall) goja.Value {
		id := stringArg(vm, "addToBatch", "the ID", call.Argument(0))
		params := jobSpecs(vm, "addToBatch", call.Argument(1))
		rows, err := h.client(vm, "addToBatch").AddToBatch(ctx, id, params...)
		if err != nil {
			throw(vm, "addToBatch", err)
		}
		return fromJSON(vm, jsJobsJSON{Items: jsJobsOf(rows), Count: len(rows)})
	})
	set("addToBatchTx", func(ctx context.Context, call goja.FunctionCall) goja.Value {
		txApp := appArg(vm, "addToBatchTx", call.Argument(0))
		id := stringArg(vm, "addToBatchTx", "the ID", call.Argument(1))
		params := jobSpecs(vm, "addToBatchTx", call.Argument(2))
		rows, err := h.jobs.AddToBatchTx(ctx, txApp, id, params...)
		if err != nil {
			throw(vm, "addToBatchTx", err)
		}
		return fromJSON(vm, jsJobsJSON{Items: jsJobsOf(rows), Count: len(rows)})
	})
}

// workflowBuilder returns the builder $jobs.workflow(name) returns: a
// sluice.Workflow that JavaScript adds tasks and callbacks to, and
// enqueues. Each call checks its arguments as $jobs.enqueue does and
// throws at once; what is wrong with the graph throws at enqueue, which
// then writes nothing.
func (h *jsHost) workflowBuilder(vm *goja.Runtime, name string) *goja.Object {
	w := sluice.NewWorkflow(name)
	var tasks []string // in the order added, for the answer
	b := newBuilder(vm)
	b.method("add", func(call goja.FunctionCall) {
		const op = "workflow(...).add"
		task := stringArg(vm, op, "the task's name", call.Argument(0))
		var o jsTaskOptions
		args, opts := h.jobArgs(vm, op, argsFrom(call.Arguments, 1, 3), &o)
		w.Add(task, args, opts, namesArg(vm, op, call.Argument(4))...)
		tasks = append(tasks, task)
	})
	callbacks(h, b, "workflow", w.OnSuccess, w.OnFailure, w.OnComplete)
	enqueues(h, b, "workflow",
		func(ctx context.Context, c *sluice.Client[*sql.Tx]) (*sluice.WorkflowResult, error) {
			return c.EnqueueWorkflow(ctx, w)
		},
		func(ctx context.Context, txApp core.App) (*sluice.WorkflowResult, error) {
			return h.jobs.EnqueueWorkflowTx(ctx, txApp, w)
		},
		func(res *sluice.WorkflowResult) any {
			out := jsEnqueuedGroup{ID: res.ID, Kind: sluice.KindWorkflow, Name: name, Jobs: make([]*jsJob, len(tasks))}
			for i, t := range tasks {
				out.Jobs[i] = jsJobOf(res.Tasks[t])
			}
			return out
		})
	return b.obj
}

// batchBuilder returns the builder $jobs.batch(name) returns, as
// workflowBuilder does for a workflow.
func (h *jsHost) batchBuilder(vm *goja.Runtime, name string) *goja.Object {
	batch := sluice.NewBatch(name)
	b := newBuilder(vm)
	b.method("add", func(call goja.FunctionCall) {
		var o jsEnqueueOptions
		args, opts := h.jobArgs(vm, "batch(...).add", argsFrom(call.Arguments, 0, 3), &o)
		batch.Add(args, opts)
	})
	b.method("keepOpen", func(goja.FunctionCall) { batch.KeepOpen() })
	callbacks(h, b, "batch", batch.OnSuccess, batch.OnFailure, batch.OnComplete)
	enqueues(h, b, "batch",
		func(ctx context.Context, c *sluice.Client[*sql.Tx]) (*sluice.BatchResult, error) {
			return c.EnqueueBatch(ctx, batch)
		},
		func(ctx context.Context, txApp core.App) (*sluice.BatchResult, error) {
			return h.jobs.EnqueueBatchTx(ctx, txApp, batch)
		},
		func(res *sluice.BatchResult) any {
			return jsEnqueuedGroup{ID: res.ID, Kind: sluice.KindBatch, Name: name, Jobs: jsJobsOf(res.Jobs)}
		})
	return b.obj
}

// builder is the JavaScript object of a workflow's or batch's builder.
type builder struct {
	vm  *goja.Runtime
	obj *goja.Object
}

func newBuilder(vm *goja.Runtime) *builder { return &builder{vm: vm, obj: vm.NewObject()} }

// method sets a method of the builder that returns the builder, so that
// calls chain.
func (b *builder) method(name string, f func(call goja.FunctionCall)) {
	if err := b.obj.Set(name, func(call goja.FunctionCall) goja.Value {
		f(call)
		return b.obj
	}); err != nil {
		panic(err)
	}
}

// enqueues sets the builder's enqueue(), which calls plain, and
// enqueueTx(txApp), which calls tx; both return what answer makes of the
// result, and get a context as the functions of $jobs do.
func enqueues[R any](h *jsHost, b *builder, kind string, plain func(context.Context, *sluice.Client[*sql.Tx]) (R, error),
	tx func(context.Context, core.App) (R, error), answer func(R) any) {
	for _, name := range []string{"enqueue", "enqueueTx"} {
		op := kind + "(...)." + name
		err := b.obj.Set(name, func(call goja.FunctionCall) goja.Value {
			ctx, cancel := context.WithTimeout(context.Background(), JSCallTimeout)
			defer cancel()
			var res R
			var err error
			if name == "enqueue" {
				res, err = plain(ctx, h.client(b.vm, op))
			} else {
				res, err = tx(ctx, appArg(b.vm, op, call.Argument(0)))
			}
			if err != nil {
				throw(b.vm, op, err)
			}
			return fromJSON(b.vm, answer(res))
		})
		if err != nil {
			panic(err)
		}
	}
}

// callbacks sets the builder's onSuccess, onFailure and onComplete, each
// taking a job as $jobs.enqueue does, (topic, payload, options), and
// adding it with the Go builder's method.
func callbacks[B any](h *jsHost, b *builder, kind string, onSuccess, onFailure, onComplete func(sluice.JobArgs, *sluice.EnqueueOptions) B) {
	for name, add := range map[string]func(sluice.JobArgs, *sluice.EnqueueOptions) B{
		"onSuccess": onSuccess, "onFailure": onFailure, "onComplete": onComplete,
	} {
		b.method(name, func(call goja.FunctionCall) {
			var o jsEnqueueOptions
			args, opts := h.jobArgs(b.vm, kind+"(...)."+name, argsFrom(call.Arguments, 0, 3), &o)
			add(args, opts)
		})
	}
}

// argsFrom returns n arguments of args from i on, undefined where there
// are fewer.
func argsFrom(args []goja.Value, i, n int) []goja.Value {
	out := make([]goja.Value, n)
	for k := range out {
		out[k] = goja.Undefined()
		if i+k < len(args) {
			out[k] = args[i+k]
		}
	}
	return out
}

// stringArg returns v, which must be a JavaScript string, or throws
// naming what it is.
func stringArg(vm *goja.Runtime, op, what string, v goja.Value) string {
	var s string
	ok := v != nil
	if ok {
		s, ok = v.Export().(string)
	}
	if !ok {
		throw(vm, op, fmt.Errorf("%w: %s must be a string, not %s", ErrInvalidJSOptions, what, jsTypeOf(v)))
	}
	return s
}

// optionalString is stringArg for an argument that may be left out (or
// null): "" then.
func optionalString(vm *goja.Runtime, op, what string, v goja.Value) string {
	if goja.IsUndefined(v) || goja.IsNull(v) {
		return ""
	}
	return stringArg(vm, op, what, v)
}

// namesArg returns v, the tasks a task comes after: an array of strings,
// or nothing (undefined or null); it throws for anything else.
func namesArg(vm *goja.Runtime, op string, v goja.Value) []string {
	if goja.IsUndefined(v) || goja.IsNull(v) {
		return nil
	}
	var names []string
	b, err := toJSON(vm, v)
	if err == nil {
		err = json.Unmarshal(b, &names)
	}
	if err != nil || names == nil {
		throw(vm, op, fmt.Errorf("%w: the tasks it comes after must be an array of task names, not %s", ErrInvalidJSOptions, jsTypeOf(v)))
	}
	return names
}

// jsTypeOf names the type of a JavaScript value for an error.
func jsTypeOf(v goja.Value) string {
	switch {
	case v == nil || goja.IsUndefined(v):
		return "undefined"
	case goja.IsNull(v):
		return "null"
	}
	switch x := v.Export().(type) {
	case []any:
		return "an array"
	case string:
		return fmt.Sprintf("the string %q", x)
	case bool:
		return "a boolean"
	case int64, float64:
		return "the number " + v.String()
	}
	return "an object"
}

// jsOptions are the options a job of $jobs takes, read into sluice's.
type jsOptions interface {
	options(now time.Time) (*sluice.EnqueueOptions, error)
}

// jobArgs reads (topic, payload, options) as $jobs.enqueue does, the
// options into o, and throws at what is wrong.
func (h *jsHost) jobArgs(vm *goja.Runtime, op string, args []goja.Value, o jsOptions) (sluice.RawArgs, *sluice.EnqueueOptions) {
	if goja.IsUndefined(args[0]) || goja.IsNull(args[0]) {
		throw(vm, op, sluice.ErrEmptyTopic)
	}
	topic := stringArg(vm, op, "the topic", args[0])
	payload, err := toJSON(vm, args[1])
	if err != nil {
		throw(vm, op, fmt.Errorf("payload: %w", &sluice.ArgsError{Topic: topic, Err: err}))
	}
	if err := decodeJS(vm, args[2], o); err != nil {
		throw(vm, op, err)
	}
	opts, err := o.options(time.Now())
	if err != nil {
		throw(vm, op, err)
	}
	return sluice.RawArgs{TopicName: topic, Payload: payload}, opts
}

// jsTaskOptions are the options of a workflow's task: a job's, and what
// becomes of it when a task it comes after fails for good.
type jsTaskOptions struct {
	jsEnqueueOptions
	// OnDependencyFailure is "cancel" (the default) or "run" (see
	// sluice.EnqueueOptions).
	OnDependencyFailure string `json:"onDependencyFailure"`
}

func (o *jsTaskOptions) options(now time.Time) (*sluice.EnqueueOptions, error) {
	opts, err := o.jsEnqueueOptions.options(now)
	if err != nil {
		return nil, err
	}
	opts.OnDependencyFailure = sluice.DependencyPolicy(o.OnDependencyFailure)
	return opts, nil
}

// jsJobSpec is one job of $jobs.addToBatch: what $jobs.enqueue takes, as
// an object.
type jsJobSpec struct {
	Topic   *string           `json:"topic"`
	Payload json.RawMessage   `json:"payload"`
	Options *jsEnqueueOptions `json:"options"`
}

// jobSpecs reads v, an array of jobs ({topic, payload, options}), or
// throws.
func jobSpecs(vm *goja.Runtime, op string, v goja.Value) []sluice.EnqueueParams {
	var specs []jsJobSpec
	if err := decodeJS(vm, v, &specs); err != nil {
		throw(vm, op, fmt.Errorf("the jobs: %w", err))
	}
	if specs == nil {
		throw(vm, op, fmt.Errorf("%w: the jobs must be an array of {topic, payload, options}, not %s", ErrInvalidJSOptions, jsTypeOf(v)))
	}
	now := time.Now()
	params := make([]sluice.EnqueueParams, len(specs))
	for i, s := range specs {
		if s.Topic == nil {
			throw(vm, op, fmt.Errorf("jobs[%d]: %w", i, sluice.ErrEmptyTopic))
		}
		o := s.Options
		if o == nil {
			o = &jsEnqueueOptions{}
		}
		opts, err := o.options(now)
		if err != nil {
			throw(vm, op, fmt.Errorf("jobs[%d]: %w", i, err))
		}
		params[i] = sluice.EnqueueParams{Args: sluice.RawArgs{TopicName: *s.Topic, Payload: s.Payload}, Options: opts}
	}
	return params
}

// jsGroupFilter is the filter of $jobs.listWorkflows and listBatches.
type jsGroupFilter struct {
	Name          string    `json:"name"`
	Statuses      []string  `json:"statuses"`
	CreatedFrom   time.Time `json:"createdFrom"`
	CreatedBefore time.Time `json:"createdBefore"`
	Limit         int       `json:"limit"`
	Cursor        string    `json:"cursor"`
}

func (f *jsGroupFilter) filter() *sluice.GroupFilter {
	gf := &sluice.GroupFilter{Name: f.Name, CreatedFrom: f.CreatedFrom, CreatedBefore: f.CreatedBefore, Limit: f.Limit, Cursor: f.Cursor}
	for _, s := range f.Statuses {
		gf.Statuses = append(gf.Statuses, sluice.GroupStatus(s))
	}
	return gf
}

// jsEnqueuedGroup is what a builder's enqueue returns, as POST
// /api/jobs/workflows (or batches) answers: the group's ID and its jobs,
// in the order added.
type jsEnqueuedGroup struct {
	ID   string           `json:"id"`
	Kind sluice.GroupKind `json:"kind"`
	Name string           `json:"name"`
	Jobs []*jsJob         `json:"jobs"`
}

// jsGroup is a workflow or batch as $jobs.getWorkflow and getBatch return
// it: sluice's Group, with its jobs and callbacks as $jobs shows jobs.
type jsGroup struct {
	*sluice.Group
	Jobs      []*jsJob      `json:"jobs"`
	Callbacks []*jsCallback `json:"callbacks"`
}

// jsCallback is a callback of a group, with its job as $jobs shows jobs.
type jsCallback struct {
	*sluice.GroupCallback
	Job *jsJob `json:"job,omitempty"`
}

func jsGroupOf(g *sluice.Group) *jsGroup {
	out := &jsGroup{Group: g, Jobs: jsJobsOf(g.Jobs), Callbacks: make([]*jsCallback, len(g.Callbacks))}
	for i, cb := range g.Callbacks {
		out.Callbacks[i] = &jsCallback{GroupCallback: cb, Job: jsJobOf(cb.Job)}
	}
	return out
}

// jsJobsJSON is what the calls that change a group's jobs return, as a
// bulk action of the HTTP API answers: the jobs changed.
type jsJobsJSON struct {
	Items []*jsJob `json:"items"`
	Count int      `json:"count"`
}
