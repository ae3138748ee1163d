package sluice

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// Enqueue enqueues one job. It is committed when Enqueue returns. With a
// UniqueKey that a live job already holds, it returns that job with
// Duplicate set and enqueues nothing. Bad input (empty topic, args that do
// not encode, a payload over the limit, invalid options, an unknown queue)
// returns a typed error and writes nothing.
func (c *Client[TTx]) Enqueue(ctx context.Context, args JobArgs, opts *EnqueueOptions) (*EnqueueResult, error) {
	res, err := c.enqueue(ctx, c.exec, false, []EnqueueParams{{Args: args, Options: opts}})
	if err != nil {
		return nil, err
	}
	return &res[0], nil
}

// EnqueueTx enqueues one job inside tx, beside the caller's own writes. If
// tx commits, the job exists and will run; if it rolls back, the job never
// existed. Workers cannot see the job before the commit. Otherwise it
// behaves as Enqueue.
func (c *Client[TTx]) EnqueueTx(ctx context.Context, tx TTx, args JobArgs, opts *EnqueueOptions) (*EnqueueResult, error) {
	if isNil(tx) {
		return nil, fmt.Errorf("enqueue %s: %w", topicOf(args), ErrNilTx)
	}
	res, err := c.enqueue(ctx, c.driver.UnwrapExecutor(tx), true, []EnqueueParams{{Args: args, Options: opts}})
	if err != nil {
		return nil, err
	}
	return &res[0], nil
}

// EnqueueMany enqueues many jobs at once, all or none, returning one result
// per job in order. It is much faster than Enqueue in a loop. If any job is
// invalid, nothing is written.
func (c *Client[TTx]) EnqueueMany(ctx context.Context, params []EnqueueParams) ([]EnqueueResult, error) {
	return c.enqueue(ctx, c.exec, false, params)
}

// EnqueueManyTx is EnqueueMany inside tx: the jobs exist if and only if tx
// commits.
func (c *Client[TTx]) EnqueueManyTx(ctx context.Context, tx TTx, params []EnqueueParams) ([]EnqueueResult, error) {
	if isNil(tx) {
		return nil, fmt.Errorf("enqueue many: %w", ErrNilTx)
	}
	return c.enqueue(ctx, c.driver.UnwrapExecutor(tx), true, params)
}

// enqueue validates params and inserts them through exec. inTx is true when
// exec is the caller's transaction: the jobs then exist only if it commits,
// which the client cannot know.
func (c *Client[TTx]) enqueue(ctx context.Context, exec driver.Executor, inTx bool, params []EnqueueParams) ([]EnqueueResult, error) {
	if len(params) == 0 {
		return []EnqueueResult{}, nil
	}
	if len(c.cfg.EnqueueMiddleware) > 0 {
		return c.enqueueThrough(ctx, inTx, params, func(ctx context.Context, params []EnqueueParams) ([]EnqueueResult, error) {
			return c.insert(ctx, exec, inTx, params)
		})
	}
	return c.insert(ctx, exec, inTx, params)
}

// insert checks params and inserts them through exec, as enqueue does
// once the middleware has run.
func (c *Client[TTx]) insert(ctx context.Context, exec driver.Executor, inTx bool, params []EnqueueParams) ([]EnqueueResult, error) {
	now := c.now()
	inserts := make([]*driver.JobInsert, len(params))
	for i, p := range params {
		ins, err := c.newInsert(p.Args, p.Options, now)
		if err != nil {
			if len(params) > 1 {
				return nil, fmt.Errorf("enqueue job %d: %w", i, err)
			}
			return nil, err
		}
		inserts[i] = ins
	}
	if err := c.resolveSequences(ctx, exec, inserts); err != nil {
		if len(params) == 1 {
			return nil, fmt.Errorf("enqueue %s: %w", inserts[0].Topic, err)
		}
		return nil, fmt.Errorf("enqueue %d jobs: %w", len(params), err)
	}
	// Jobs enqueued and committed here get an enqueued event, which must
	// come before the started event of a worker quick enough to claim
	// one before JobInsertMany has returned.
	held := !inTx && c.events.holdEnqueued(inserts)
	results, err := exec.JobInsertMany(ctx, &driver.JobInsertManyParams{Jobs: inserts})
	if err != nil {
		if held {
			c.events.releaseEnqueued(inserts, nil, time.Time{})
		}
		if len(params) == 1 {
			return nil, fmt.Errorf("enqueue %s: %w", inserts[0].Topic, err)
		}
		return nil, fmt.Errorf("enqueue %d jobs: %w", len(params), err)
	}
	out := make([]EnqueueResult, len(results))
	for i, r := range results {
		out[i] = EnqueueResult{Job: r.Job, Duplicate: r.Duplicate}
	}
	if held {
		c.events.releaseEnqueued(inserts, results, c.now())
	}
	if !inTx && c.feed.running() {
		c.feed.note(insertedRows(results), false)
	}
	c.wakeFor(inserts, now, !inTx)
	return out, nil
}

// newInsert validates one job and builds its insert.
func (c *Client[TTx]) newInsert(args JobArgs, opts *EnqueueOptions, now time.Time) (*driver.JobInsert, error) {
	if args == nil {
		return nil, fmt.Errorf("enqueue: %w", &ArgsError{Topic: "", Err: errors.New("args are nil")})
	}
	topic := args.Topic()
	if topic == "" {
		return nil, fmt.Errorf("enqueue %T: %w", args, ErrEmptyTopic)
	}
	if err := driver.CheckText(topic); err != nil {
		return nil, fmt.Errorf("enqueue %q: %w", topic, &ArgsError{Topic: topic, Err: fmt.Errorf("topic %w", err)})
	}
	if opts == nil {
		opts = &EnqueueOptions{}
	}
	queue := orDefault(opts.Queue, QueueDefault)
	if _, ok := c.cfg.Queues[queue]; !ok {
		return nil, fmt.Errorf("enqueue %s: %w: %q is not in Config.Queues", topic, ErrUnknownQueue, queue)
	}
	maxRetries, err := c.maxRetries(topic, opts.MaxRetries)
	if err != nil {
		return nil, fmt.Errorf("enqueue %s: %w", topic, err)
	}
	payload, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("enqueue %s: %w", topic, &ArgsError{Topic: topic, Err: err})
	}
	if err := driver.CheckJSON(payload); err != nil {
		return nil, fmt.Errorf("enqueue %s: %w", topic, &ArgsError{Topic: topic, Err: fmt.Errorf("payload %w", err)})
	}
	if len(payload) > c.cfg.MaxPayloadBytes {
		return nil, fmt.Errorf("enqueue %s: %w: %d bytes, limit %d", topic, ErrPayloadTooLarge, len(payload), c.cfg.MaxPayloadBytes)
	}
	if _, ok := rawArgs(args); ok {
		if err := c.checkRaw(topic, payload); err != nil {
			return nil, fmt.Errorf("enqueue %s: %w", topic, err)
		}
	}
	runAt := now
	if !opts.RunAt.IsZero() {
		runAt = opts.RunAt.UTC().Truncate(time.Microsecond)
	}
	if err := driver.CheckText(opts.UniqueKey); err != nil {
		return nil, fmt.Errorf("enqueue %s: %w", topic, &OptionsError{Field: "UniqueKey", Reason: err.Error()})
	}
	if opts.Priority < minPriority || opts.Priority > maxPriority {
		return nil, fmt.Errorf("enqueue %s: %w", topic,
			&OptionsError{Field: "Priority", Reason: fmt.Sprintf("must be between %d and %d", minPriority, maxPriority)})
	}
	tags, err := checkTags(opts.Tags)
	if err != nil {
		return nil, fmt.Errorf("enqueue %s: %w", topic, err)
	}
	meta, err := encodeMetadata(opts.Metadata)
	if err != nil {
		return nil, fmt.Errorf("enqueue %s: %w", topic, err)
	}
	deps, policy, err := checkDependencies(opts.DependsOn, opts.OnDependencyFailure)
	if err != nil {
		return nil, fmt.Errorf("enqueue %s: %w", topic, err)
	}
	key, sequence, err := jobKey(args, opts)
	if err != nil {
		return nil, fmt.Errorf("enqueue %s: %w", topic, err)
	}
	ins := &driver.JobInsert{
		ID:         c.cfg.NewJobID(),
		Topic:      topic,
		Queue:      queue,
		Priority:   opts.Priority,
		Payload:    payload,
		MaxRetries: maxRetries,
		RunAt:      runAt,
		CreatedAt:  now,
		UniqueKey:  opts.UniqueKey,
		Tags:       tags,
		Metadata:   meta,
		DependsOn:  deps,
		// OnDependencyFailure is empty without DependsOn.
		OnDependencyFailure: policy,
		Key:                 key,
		Sequence:            sequence,
	}
	if err := c.cfg.crypt.seal(ins); err != nil {
		return nil, fmt.Errorf("enqueue %s: %w", topic, err)
	}
	return ins, nil
}

// maxMaxRetries is the largest MaxRetries accepted: retries are counted in
// 32-bit integers, and a snooze adds one.
const maxMaxRetries = 1 << 30

// Priorities are stored as 16-bit integers.
const (
	minPriority = -32768
	maxPriority = 32767
)

// maxRetries resolves a job's retries from its options, its worker (if this
// client has it) and the Config.
func (c *Client[TTx]) maxRetries(topic string, opt int) (int, error) {
	switch {
	case opt > maxMaxRetries:
		return 0, &OptionsError{Field: "MaxRetries", Reason: fmt.Sprintf("must be at most %d", maxMaxRetries)}
	case opt > 0:
		return opt, nil
	case opt == NoRetries:
		return 0, nil
	case opt < 0:
		return 0, &OptionsError{Field: "MaxRetries", Reason: "must be >= 0, or NoRetries"}
	}
	if unit, ok := c.cfg.Workers.units[topic]; ok && unit.maxRetries >= NoRetries {
		return retries(unit.maxRetries), nil
	}
	return retries(c.cfg.MaxRetries), nil
}

// wakeFor wakes this client's claim loops for newly enqueued jobs: at
// their RunAt for delayed ones, and for jobs due now by one route only. A
// client that listens to its driver's notifications is woken by them, as
// every other listening client is (on Postgres once the enqueue has
// committed, even in a caller's transaction); one that does not listen
// wakes itself here, and committed is false when the jobs are in a
// caller's transaction that may not have committed yet.
func (c *Client[TTx]) wakeFor(inserts []*driver.JobInsert, now time.Time, committed bool) {
	r := c.run.Load()
	if r == nil {
		return
	}
	woken := ""
	for _, ins := range inserts {
		switch {
		case ins.RunAt.After(now):
			r.wakeAt(ins.Queue, ins.RunAt)
		case r.stopListen != nil: // the driver's notification wakes the queue
		case ins.Queue != woken: // one wake-up per queue serves a whole batch
			r.wake(ins.Queue, committed)
			woken = ins.Queue
		}
	}
}

func topicOf(args JobArgs) string {
	if args == nil {
		return "<nil>"
	}
	return args.Topic()
}
