package sluice_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

// trace records what middleware and hooks saw, in order.
type trace struct {
	mu    sync.Mutex
	steps []string
}

func (tr *trace) add(s string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.steps = append(tr.steps, s)
}

func (tr *trace) get() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.steps...)
}

func (tr *trace) mw(name string) sluice.WorkMiddleware {
	return sluice.WorkMiddlewareFunc(func(ctx context.Context, job *sluice.JobRow, next func(context.Context) error) error {
		tr.add(name + " before")
		err := next(ctx)
		tr.add(name + " after")
		return err
	})
}

// tracedWorker is a worker with middleware of its own.
type tracedWorker struct {
	sluice.WorkerDefaults[noteArgs]
	tr *trace
}

func (w *tracedWorker) Work(ctx context.Context, job *sluice.Job[noteArgs]) error {
	w.tr.add("work")
	return nil
}

func (w *tracedWorker) Middleware() []sluice.WorkMiddleware {
	return []sluice.WorkMiddleware{w.tr.mw("worker")}
}

func TestWorkMiddlewareAndHooks(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testWorkMiddlewareAndHooks[*sql.Tx], testWorkMiddlewareAndHooks[pgx.Tx])
}

func testWorkMiddlewareAndHooks[TTx any](t *testing.T, k *kit[TTx]) {
	tr := &trace{}
	ws := sluice.NewWorkers()
	sluice.AddWorker(ws, &tracedWorker{tr: tr})
	done := make(chan *sluice.JobDone, 1)
	c := k.client(t, &sluice.Config{Workers: ws,
		WorkMiddleware: []sluice.WorkMiddleware{tr.mw("first"), tr.mw("second")},
		Hooks: sluice.Hooks{
			JobStarted:  func(context.Context, *sluice.JobRow) { tr.add("started") },
			JobFinished: func(_ context.Context, _ *sluice.JobRow, err error, _ time.Duration) { tr.add("finished") },
			JobDone:     func(_ context.Context, d *sluice.JobDone) { done <- d },
		}})
	res, err := c.Enqueue(t.Context(), noteArgs{N: 1}, nil)
	require.NoError(t, err)
	d := <-done
	require.Equal(t, sluice.EventCompleted, d.Event)
	require.Equal(t, sluice.StatusCompleted, d.Job.Status)
	require.Equal(t, res.Job.ID, d.Job.ID)
	require.Equal(t, []string{"started", "first before", "second before", "worker before", "work",
		"worker after", "second after", "first after", "finished"}, tr.get())
}

func TestErrorHandler(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testErrorHandler[*sql.Tx], testErrorHandler[pgx.Tx])
}

func testErrorHandler[TTx any](t *testing.T, k *kit[TTx]) {
	var seen []error
	var mu sync.Mutex
	ws := workers(func(ctx context.Context, job *sluice.Job[noteArgs]) error {
		switch job.Args.N {
		case 1:
			panic("boom")
		default:
			return errors.New("plain")
		}
	})
	c := k.client(t, &sluice.Config{Workers: ws, ErrorHandler: func(ctx context.Context, job *sluice.JobRow, err error) sluice.ErrorDecision {
		mu.Lock()
		seen = append(seen, err)
		mu.Unlock()
		var p *sluice.PanicError
		if errors.As(err, &p) {
			return sluice.ErrorDecision{Cancel: true}
		}
		return sluice.ErrorDecision{RetryIn: time.Hour}
	}})
	panicked, err := c.Enqueue(t.Context(), noteArgs{N: 1}, nil)
	require.NoError(t, err)
	row := waitFor(t, c, panicked.Job.ID, sluice.StatusCancelled)
	require.Contains(t, row.Errors[0].Error, "boom")

	plain, err := c.Enqueue(t.Context(), noteArgs{N: 2}, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		row, err := c.Get(t.Context(), plain.Job.ID)
		require.NoError(t, err)
		return row.Status == sluice.StatusPending && row.Attempt == 1
	}, 10*time.Second, 5*time.Millisecond)
	row, err = c.Get(t.Context(), plain.Job.ID)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(time.Hour), row.RunAt, time.Minute, "retried after the handler's delay")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, 2)
}

// metaMiddleware adds a request ID to every job's metadata, and refuses
// jobs of topic "other".
var metaMiddleware = sluice.EnqueueMiddlewareFunc(func(ctx context.Context, jobs []*sluice.EnqueueJob,
	next func(context.Context) ([]sluice.EnqueueResult, error)) ([]sluice.EnqueueResult, error) {
	for _, j := range jobs {
		if j.Topic == "other" {
			return nil, errors.New("other jobs are not allowed")
		}
		if j.Options.Metadata == nil {
			j.Options.Metadata = map[string]any{}
		}
		j.Options.Metadata["request_id"] = "r-1"
		j.Options.Tags = append(j.Options.Tags, "mw")
	}
	return next(ctx)
})

func TestEnqueueMiddleware(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testEnqueueMiddleware[*sql.Tx], testEnqueueMiddleware[pgx.Tx])
}

func testEnqueueMiddleware[TTx any](t *testing.T, k *kit[TTx]) {
	c := k.client(t, &sluice.Config{EnqueueMiddleware: []sluice.EnqueueMiddleware{metaMiddleware}})
	opts := &sluice.EnqueueOptions{Metadata: map[string]any{"user": "ann"}, Tags: []string{"a"}}
	res, err := c.Enqueue(t.Context(), noteArgs{}, opts)
	require.NoError(t, err)
	require.JSONEq(t, `{"user": "ann", "request_id": "r-1"}`, string(res.Job.Metadata))
	require.Equal(t, []string{"a", "mw"}, res.Job.Tags)
	require.Equal(t, map[string]any{"user": "ann"}, opts.Metadata, "the caller's map is unchanged")
	require.Equal(t, []string{"a"}, opts.Tags)

	_, err = c.EnqueueMany(t.Context(), []sluice.EnqueueParams{{Args: noteArgs{}}, {Args: otherArgs{}}})
	require.ErrorContains(t, err, "refused by middleware: other jobs are not allowed")
	require.Equal(t, 1, k.count(t), "nothing written")
}

func TestTagsAndMetadata(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testTagsAndMetadata[*sql.Tx], testTagsAndMetadata[pgx.Tx])
}

func testTagsAndMetadata[TTx any](t *testing.T, k *kit[TTx]) {
	c := k.client(t, nil)
	ctx := t.Context()
	for _, tc := range []struct {
		opts  sluice.EnqueueOptions
		field string
	}{
		{sluice.EnqueueOptions{Tags: []string{""}}, "Tags[0]"},
		{sluice.EnqueueOptions{Tags: []string{"a\x00"}}, "Tags[0]"},
		{sluice.EnqueueOptions{Tags: []string{"ok", "\xff"}}, "Tags[1]"},
		{sluice.EnqueueOptions{Tags: []string{string(make([]byte, sluice.MaxTagBytes+1))}}, "Tags[0]"},
		{sluice.EnqueueOptions{Tags: manyTags(sluice.MaxTags + 1)}, "Tags"},
		{sluice.EnqueueOptions{Metadata: map[string]any{"k": "a\x00"}}, "Metadata"},
		{sluice.EnqueueOptions{Metadata: map[string]any{"\xff": 1}}, "Metadata"},
		{sluice.EnqueueOptions{Metadata: map[string]any{"k": []any{map[string]any{"x": "\x00"}}}}, "Metadata"},
		{sluice.EnqueueOptions{Metadata: map[string]any{"k": make(chan int)}}, "Metadata"},
		{sluice.EnqueueOptions{Metadata: map[string]any{"k": string(make([]byte, sluice.MaxMetadataBytes))}}, "Metadata"},
	} {
		_, err := c.Enqueue(ctx, noteArgs{}, &tc.opts)
		var oe *sluice.OptionsError
		require.ErrorAs(t, err, &oe, "%+v", tc.opts)
		require.ErrorIs(t, err, sluice.ErrInvalidOptions)
		require.Equal(t, tc.field, oe.Field)
	}
	require.Zero(t, k.count(t))

	a, err := c.Enqueue(ctx, noteArgs{}, &sluice.EnqueueOptions{Tags: []string{"x", "y", "x"},
		Metadata: map[string]any{"tenant": "acme", "n": 2}})
	require.NoError(t, err)
	require.Equal(t, []string{"x", "y"}, a.Job.Tags)
	_, err = c.Enqueue(ctx, noteArgs{}, &sluice.EnqueueOptions{Tags: []string{"y"}})
	require.NoError(t, err)
	page, err := c.List(ctx, &sluice.ListFilter{JobFilter: sluice.JobFilter{Tags: []string{"x", "y"}}})
	require.NoError(t, err)
	require.Equal(t, 1, page.Total)
	got, err := c.Get(ctx, a.Job.ID)
	require.NoError(t, err)
	var meta map[string]any
	require.NoError(t, json.Unmarshal(got.Metadata, &meta))
	require.Equal(t, "acme", meta["tenant"])
	page, err = c.List(ctx, &sluice.ListFilter{JobFilter: sluice.JobFilter{Tags: []string{"x", "y"}, AnyTag: true,
		Metadata: map[string]string{"tenant": "acme"}}})
	require.NoError(t, err)
	require.Equal(t, 1, page.Total)
	_, err = c.List(ctx, &sluice.ListFilter{JobFilter: sluice.JobFilter{Tags: []string{""}}})
	require.ErrorIs(t, err, sluice.ErrInvalidFilter)

	// Tags or metadata alone are a filter a bulk action takes.
	cancelled, err := c.CancelMany(ctx, &sluice.JobFilter{Metadata: map[string]string{"tenant": "acme"}})
	require.NoError(t, err)
	require.Len(t, cancelled, 1)
	require.Equal(t, a.Job.ID, cancelled[0].ID)
	cancelled, err = c.CancelMany(ctx, &sluice.JobFilter{Tags: []string{"y"}})
	require.NoError(t, err)
	require.Len(t, cancelled, 1, "the other job tagged y")
}

func manyTags(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	return out
}
