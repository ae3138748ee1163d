package sluicepb

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/dop251/goja"
	"github.com/pocketbase/pocketbase/core"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluiceweb"
)

// JSCallTimeout is how long a call of $jobs in JavaScript may take before
// it throws.
const JSCallTimeout = 30 * time.Second

// bind sets $jobs in vm. Its functions run on vm's goroutine, the one
// running the script that calls them.
func (h *jsHost) bind(vm *goja.Runtime) {
	o := vm.NewObject()
	// Each call gets a context of its own that ends after JSCallTimeout,
	// so that a call that waits for the write connection its caller's
	// own transaction holds (enqueue instead of enqueueTx inside
	// $app.runInTransaction) throws rather than stalls every write.
	set := func(name string, f func(ctx context.Context, call goja.FunctionCall) goja.Value) {
		err := o.Set(name, func(call goja.FunctionCall) goja.Value {
			ctx, cancel := context.WithTimeout(context.Background(), JSCallTimeout)
			defer cancel()
			return f(ctx, call)
		})
		if err != nil {
			panic(err)
		}
	}

	set("enqueue", func(ctx context.Context, call goja.FunctionCall) goja.Value {
		args, opts := h.enqueueArgs(vm, "enqueue", call.Arguments)
		res, err := h.jobs.Enqueue(ctx, args, opts)
		if err != nil {
			throw(vm, "enqueue", err)
		}
		return fromJSON(vm, enqueueJSON{Job: jsJobOf(res.Job), Duplicate: res.Duplicate})
	})
	set("enqueueTx", func(ctx context.Context, call goja.FunctionCall) goja.Value {
		txApp := appArg(vm, "enqueueTx", call.Argument(0))
		args, opts := h.enqueueArgs(vm, "enqueueTx", call.Arguments[1:])
		res, err := h.jobs.EnqueueTx(ctx, txApp, args, opts)
		if err != nil {
			throw(vm, "enqueueTx", err)
		}
		return fromJSON(vm, enqueueJSON{Job: jsJobOf(res.Job), Duplicate: res.Duplicate})
	})
	set("get", func(ctx context.Context, call goja.FunctionCall) goja.Value {
		row, err := h.client(vm, "get").Get(ctx, call.Argument(0).String())
		if err != nil {
			throw(vm, "get", err)
		}
		return fromJSON(vm, jsJobOf(row))
	})
	set("list", func(ctx context.Context, call goja.FunctionCall) goja.Value {
		var f jsListFilter
		if err := decodeJS(vm, call.Argument(0), &f); err != nil {
			throw(vm, "list", err)
		}
		lf, err := f.filter()
		if err != nil {
			throw(vm, "list", err)
		}
		res, err := h.client(vm, "list").List(ctx, lf)
		if err != nil {
			throw(vm, "list", err)
		}
		return fromJSON(vm, listJSON{Items: jsJobsOf(res.Jobs), Total: res.Total, NextCursor: res.NextCursor})
	})
	set("stats", func(ctx context.Context, call goja.FunctionCall) goja.Value {
		var f jsStatsFilter
		if err := decodeJS(vm, call.Argument(0), &f); err != nil {
			throw(vm, "stats", err)
		}
		st, err := h.client(vm, "stats").Stats(ctx, &sluice.StatsFilter{Topics: f.Topics, Queues: f.Queues,
			Window: time.Duration(f.Window), Bucket: time.Duration(f.Bucket)})
		if err != nil {
			throw(vm, "stats", err)
		}
		return fromJSON(vm, sluiceweb.NewStatsResponse(st, time.Duration(f.Bucket)))
	})
	act := func(name string, do func(ctx context.Context, c *sluice.Client[*sql.Tx], id string) (*sluice.JobRow, error)) {
		set(name, func(ctx context.Context, call goja.FunctionCall) goja.Value {
			row, err := do(ctx, h.client(vm, name), call.Argument(0).String())
			if err != nil {
				throw(vm, name, err)
			}
			return fromJSON(vm, jsJobOf(row))
		})
	}
	act("requeue", func(ctx context.Context, c *sluice.Client[*sql.Tx], id string) (*sluice.JobRow, error) {
		return c.Requeue(ctx, id)
	})
	act("cancel", func(ctx context.Context, c *sluice.Client[*sql.Tx], id string) (*sluice.JobRow, error) {
		return c.Cancel(ctx, id)
	})
	act("retry", func(ctx context.Context, c *sluice.Client[*sql.Tx], id string) (*sluice.JobRow, error) {
		return c.RetryNow(ctx, id)
	})
	act("delete", func(ctx context.Context, c *sluice.Client[*sql.Tx], id string) (*sluice.JobRow, error) {
		return c.Delete(ctx, id)
	})

	h.bindGroups(vm, set)

	set("work", func(ctx context.Context, call goja.FunctionCall) goja.Value {
		if err := h.work(vm, call.Arguments); err != nil {
			throw(vm, "work", err)
		}
		return goja.Undefined()
	})
	set("ack", func(ctx context.Context, call goja.FunctionCall) goja.Value {
		txApp := appArg(vm, "ack", call.Argument(0))
		job := h.runningJob(vm, "ack", call.Argument(1))
		var err error
		if result := call.Argument(2); goja.IsUndefined(result) {
			err = h.jobs.Ack(ctx, txApp, job)
		} else {
			b, jerr := toJSON(vm, result)
			if jerr != nil {
				throw(vm, "ack", jerr)
			}
			var tx *sql.Tx
			if tx, err = Tx(txApp); err == nil {
				err = h.client(vm, "ack").AckWithResult(ctx, tx, job, json.RawMessage(b))
			}
		}
		if err != nil {
			throw(vm, "ack", err)
		}
		return goja.Undefined()
	})
	set("nack", func(ctx context.Context, call goja.FunctionCall) goja.Value {
		txApp := appArg(vm, "nack", call.Argument(0))
		job := h.runningJob(vm, "nack", call.Argument(1))
		if err := h.jobs.Nack(ctx, txApp, job, errors.New(call.Argument(2).String())); err != nil {
			throw(vm, "nack", err)
		}
		return goja.Undefined()
	})
	vm.Set("$jobs", o)
}

// client returns the jobs' client, or throws the error of getting it.
func (h *jsHost) client(vm *goja.Runtime, op string) *sluice.Client[*sql.Tx] {
	c, err := h.jobs.Client()
	if err != nil {
		throw(vm, op, err)
	}
	return c
}

// enqueueArgs reads (topic, payload, options) of $jobs.enqueue.
func (h *jsHost) enqueueArgs(vm *goja.Runtime, op string, args []goja.Value) (sluice.RawArgs, *sluice.EnqueueOptions) {
	arg := func(i int) goja.Value {
		if i < len(args) {
			return args[i]
		}
		return goja.Undefined()
	}
	topic := arg(0)
	if goja.IsUndefined(topic) || goja.IsNull(topic) {
		throw(vm, op, sluice.ErrEmptyTopic)
	}
	payload, err := toJSON(vm, arg(1))
	if err != nil {
		throw(vm, op, fmt.Errorf("payload: %w", &sluice.ArgsError{Topic: topic.String(), Err: err}))
	}
	var o jsEnqueueOptions
	if err := decodeJS(vm, arg(2), &o); err != nil {
		throw(vm, op, err)
	}
	opts, err := o.options(time.Now())
	if err != nil {
		throw(vm, op, err)
	}
	return sluice.RawArgs{TopicName: topic.String(), Payload: payload}, opts
}

// appArg returns v as the core.App it must be: the txApp of
// $app.runInTransaction.
func appArg(vm *goja.Runtime, op string, v goja.Value) core.App {
	app, ok := v.Export().(core.App)
	if !ok || !app.IsTransactional() {
		throw(vm, op, fmt.Errorf("%w: the first argument must be the txApp of $app.runInTransaction", ErrNotInTransaction))
	}
	return app
}

// runningJob returns the job v, a JS worker's job object, names: one this
// process is working now.
func (h *jsHost) runningJob(vm *goja.Runtime, op string, v goja.Value) *sluice.Job[sluice.RawArgs] {
	var id string
	if obj, ok := v.(*goja.Object); ok {
		if idv := obj.Get("id"); idv != nil {
			id = idv.String()
		}
	}
	h.mu.Lock()
	rj, ok := h.running[id]
	h.mu.Unlock()
	if !ok || rj.vm != vm {
		throw(vm, op, fmt.Errorf("%w: %q is not the job this JavaScript worker is working", ErrNotRunning, id))
	}
	return rj.job
}

// ErrNotRunning is wrapped by the error $jobs.ack and $jobs.nack throw for
// a job that the calling JavaScript worker is not working (another
// worker's job, or one no worker of this process is working).
var ErrNotRunning = errors.New("sluicepb: not a running job")

// jsJob is a job as $jobs returns it: sluice's JobRow, with its logs as
// the HTTP API shows them.
type jsJob struct {
	*sluice.JobRow
	Logs []jsLogRecord `json:"logs,omitempty"`
}

// jsLogRecord is a record a job's worker logged, as the HTTP API shows it.
type jsLogRecord struct {
	Attempt int             `json:"attempt"`
	Level   slog.Level      `json:"level"`
	Time    time.Time       `json:"time"`
	Message string          `json:"message"`
	Attrs   json.RawMessage `json:"attrs"`
}

func jsJobOf(row *sluice.JobRow) *jsJob {
	if row == nil {
		return nil
	}
	j := &jsJob{JobRow: row}
	for _, r := range row.Logs {
		attrs := r.Attrs
		if len(attrs) == 0 {
			attrs = json.RawMessage("{}")
		}
		j.Logs = append(j.Logs, jsLogRecord{Attempt: r.Attempt, Level: r.Level, Time: r.Time, Message: r.Message, Attrs: attrs})
	}
	return j
}

func jsJobsOf(rows []*sluice.JobRow) []*jsJob {
	out := make([]*jsJob, len(rows))
	for i, r := range rows {
		out[i] = jsJobOf(r)
	}
	return out
}

// enqueueJSON is what $jobs.enqueue returns, as POST /api/jobs/enqueue
// answers.
type enqueueJSON struct {
	Job       *jsJob `json:"job"`
	Duplicate bool   `json:"duplicate"`
}

// listJSON is what $jobs.list returns, as GET /api/jobs answers.
type listJSON struct {
	Items      []*jsJob `json:"items"`
	Total      int      `json:"total"`
	NextCursor string   `json:"next_cursor,omitempty"`
}

// jsEnqueueOptions are the options of $jobs.enqueue, named as the JS SDK
// names them.
type jsEnqueueOptions struct {
	RunAt      *time.Time     `json:"runAt"`
	Delay      *jsDuration    `json:"delay"`
	MaxRetries *int           `json:"maxRetries"`
	Queue      string         `json:"queue"`
	Priority   int            `json:"priority"`
	UniqueKey  string         `json:"uniqueKey"`
	Tags       []string       `json:"tags"`
	Metadata   map[string]any `json:"metadata"`
	// Key is the job's key, Sequence "hold" or "continue" (see
	// sluice.EnqueueOptions).
	Key      string `json:"key"`
	Sequence string `json:"sequence"`
}

func (o *jsEnqueueOptions) options(now time.Time) (*sluice.EnqueueOptions, error) {
	opts := &sluice.EnqueueOptions{Queue: o.Queue, Priority: o.Priority, UniqueKey: o.UniqueKey, Tags: o.Tags, Metadata: o.Metadata,
		Key: o.Key, Sequence: sluice.SequencePolicy(o.Sequence)}
	switch {
	case o.RunAt != nil && o.Delay != nil:
		return nil, fmt.Errorf("%w: runAt and delay both given", ErrInvalidJSOptions)
	case o.RunAt != nil:
		opts.RunAt = *o.RunAt
	case o.Delay != nil:
		opts.RunAt = now.Add(time.Duration(*o.Delay))
	}
	var err error
	if opts.MaxRetries, err = maxRetriesOption(o.MaxRetries, opts.MaxRetries); err != nil {
		return nil, err
	}
	return opts, nil
}

// maxRetriesOption returns the retries a maxRetries option n gives: none
// (sluice.NoRetries) for 0, n for more, absent for a nil n; an error for a
// negative n.
func maxRetriesOption(n *int, absent int) (int, error) {
	switch {
	case n == nil:
		return absent, nil
	case *n == 0:
		return sluice.NoRetries, nil
	case *n < 0:
		return 0, fmt.Errorf("%w: maxRetries: %d is negative", ErrInvalidJSOptions, *n)
	}
	return *n, nil
}

// jsListFilter is the filter of $jobs.list, named as the JS SDK names it.
type jsListFilter struct {
	Topics        []string          `json:"topics"`
	Statuses      []string          `json:"statuses"`
	Queues        []string          `json:"queues"`
	UniqueKey     string            `json:"uniqueKey"`
	CreatedFrom   time.Time         `json:"createdFrom"`
	CreatedBefore time.Time         `json:"createdBefore"`
	RunAtFrom     time.Time         `json:"runAtFrom"`
	RunAtBefore   time.Time         `json:"runAtBefore"`
	Tags          []string          `json:"tags"`
	AnyTag        bool              `json:"anyTag"`
	Metadata      map[string]string `json:"metadata"`
	Keys          []string          `json:"keys"`
	GroupIDs      []string          `json:"groupIds"`
	Order         string            `json:"order"`
	Limit         int               `json:"limit"`
	Offset        int               `json:"offset"`
	Cursor        string            `json:"cursor"`
}

func (f *jsListFilter) filter() (*sluice.ListFilter, error) {
	lf := &sluice.ListFilter{JobFilter: sluice.JobFilter{Topics: f.Topics, Queues: f.Queues, UniqueKey: f.UniqueKey,
		CreatedFrom: f.CreatedFrom, CreatedBefore: f.CreatedBefore, RunAtFrom: f.RunAtFrom, RunAtBefore: f.RunAtBefore,
		Tags: f.Tags, AnyTag: f.AnyTag, Metadata: f.Metadata, Keys: f.Keys, GroupIDs: f.GroupIDs}, Limit: f.Limit, Offset: f.Offset, Cursor: f.Cursor}
	for _, s := range f.Statuses {
		lf.Statuses = append(lf.Statuses, sluice.JobStatus(s))
	}
	switch f.Order {
	case "", "oldest":
	case "newest":
		lf.Order = sluice.NewestFirst
	default:
		return nil, fmt.Errorf("%w: order: %q is neither \"oldest\" nor \"newest\"", ErrInvalidJSOptions, f.Order)
	}
	return lf, nil
}

// jsStatsFilter is the filter of $jobs.stats.
type jsStatsFilter struct {
	Topics []string   `json:"topics"`
	Queues []string   `json:"queues"`
	Window jsDuration `json:"window"`
	Bucket jsDuration `json:"bucket"`
}

// jsDuration is a duration given in JavaScript as milliseconds or as a
// string in Go's syntax ("90s", "1h30m").
type jsDuration time.Duration

// UnmarshalJSON reads milliseconds or a Go duration string.
func (d *jsDuration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		*d = jsDuration(v)
		return nil
	}
	ms, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("duration %s is neither milliseconds nor a string like \"90s\"", b)
	}
	*d = jsDuration(ms * float64(time.Millisecond))
	return nil
}
