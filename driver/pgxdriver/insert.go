package pgxdriver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/rowcodec"
)

// CopyThreshold is the number of jobs without a unique key from which
// JobInsertMany inserts them with COPY instead of one INSERT over arrays.
const CopyThreshold = 100

// uniqueTries bounds how often a unique job's insert is run again when it
// found a conflicting live job that its statement could not yet see.
const uniqueTries = 5

// copyColumns are the columns COPY fills.
var copyColumns = []string{"id", "topic", "queue", "priority", "payload", "status",
	"attempt", "max_retries", "run_at", "created_at"}

// JobInsertMany inserts jobs without a unique key with one INSERT over
// arrays, or with COPY from [CopyThreshold] jobs on, and each unique job
// with an INSERT ... ON CONFLICT DO NOTHING that reads the live job when
// nothing was inserted. Listeners are notified, once per queue, in the same
// transaction. On the pool, a batch without unique jobs or COPY runs as one
// implicit transaction; anything else runs in a transaction of its own.
func (e *executor) JobInsertMany(ctx context.Context, params *driver.JobInsertManyParams) ([]driver.JobInsertResult, error) {
	const op = "insert"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if params == nil {
		return nil, errors.New("pgxdriver: insert: nil params")
	}
	jobs := params.Jobs
	results, plain, unique, err := rowcodec.SplitInsert(jobs)
	if err != nil {
		return nil, fmt.Errorf("pgxdriver: insert: %w", err)
	}
	if len(jobs) == 0 {
		return results, nil
	}
	var queues []string
	seen := make(map[string]bool)
	for i, j := range jobs {
		if j.Priority != int(int32(j.Priority)) || j.MaxRetries != int(int32(j.MaxRetries)) {
			return nil, fmt.Errorf("pgxdriver: insert: job %d: priority %d or max retries %d out of the 32-bit range",
				i, j.Priority, j.MaxRetries)
		}
		if _, ok := parseUUID(j.ID); !ok {
			return nil, fmt.Errorf("pgxdriver: insert: job %d: ID %q is not a UUID", i, j.ID)
		}
		for _, dep := range j.DependsOn {
			if _, ok := parseUUID(dep); !ok {
				return nil, fmt.Errorf("pgxdriver: insert: job %d: dependency %q is not a UUID", i, dep)
			}
		}
		if !seen[j.Queue] {
			seen[j.Queue] = true
			queues = append(queues, j.Queue)
		}
	}
	useCopy := len(plain) >= CopyThreshold
	// Jobs without a unique key are stored waiting by their insert; a
	// unique one, which may turn out a duplicate, by an update after it.
	waits := rowcodec.Waits(jobs)
	var uniqueWaits []int
	for _, i := range waits {
		if jobs[i].UniqueKey != "" {
			uniqueWaits = append(uniqueWaits, i)
		}
	}
	run := func(db dbtx) error {
		if useCopy {
			if _, err := db.CopyFrom(ctx, e.d.tableIdent(), copyColumnsFor(plain), copySource(plain)); err != nil {
				return err
			}
		}
		b := &pgx.Batch{}
		if len(plain) > 0 && !useCopy {
			queueInsertRows(b, e.d.q, plain)
		}
		for _, i := range unique {
			b.Queue(e.d.q.insertUnique, uniqueArgs(jobs[i])...)
		}
		b.Queue(e.d.q.notify, e.d.q.channel, queues)
		if err := runInsertBatch(ctx, db, b, e.d.q, jobs, unique, len(plain) > 0 && !useCopy, results); err != nil {
			return err
		}
		return e.storeWaits(ctx, db, jobs, uniqueWaits, results)
	}

	switch {
	case !e.inTx && useCopy && len(unique) == 0:
		err = e.copyPlain(ctx, plain, queues)
	case e.inTx || useCopy || len(unique) > 0:
		err = e.atomic(ctx, run)
	default:
		err = e.insertPlain(ctx, plain, queues)
	}
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	rowcodec.MarkWaiting(results, jobs, waits)
	return results, nil
}

// copyPlain inserts jobs, none with a unique key, on the pool with one
// COPY, which commits by itself (one round trip, where a transaction around
// it took four), then has queues notified once it has committed (see
// [Driver.notifyLater]). Once sent, the COPY runs to the end whatever
// happens to ctx, which was checked before: a COPY cancelled while the
// server commits would otherwise report a failure for jobs that were
// stored.
func (e *executor) copyPlain(ctx context.Context, jobs []*driver.JobInsert, queues []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cctx, cancel := e.detach(ctx)
	defer cancel()
	if _, err := e.db.CopyFrom(cctx, e.d.tableIdent(), copyColumnsFor(jobs), copySource(jobs)); err != nil {
		return err
	}
	e.d.notifyLater(queues)
	return nil
}

// runInsertBatch sends b (the plain insert if hasPlain, then one statement
// per unique job, then the notification) and reads the unique jobs' results.
// A unique job whose statement returned nothing is inserted again.
func runInsertBatch(ctx context.Context, db dbtx, b *pgx.Batch, q *queries, jobs []*driver.JobInsert,
	unique []int, hasPlain bool, results []driver.JobInsertResult) error {
	br := db.SendBatch(ctx, b)
	var retry []int
	err := func() error {
		if hasPlain {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		for _, i := range unique {
			res, err := readUnique(br.QueryRow())
			if err != nil {
				return err
			}
			if res == nil {
				retry = append(retry, i)
				continue
			}
			results[i] = *res
		}
		_, err := br.Exec()
		return err
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	for _, i := range retry {
		res, err := insertUniqueAgain(ctx, db, q, jobs[i])
		if err != nil {
			return err
		}
		results[i] = *res
	}
	return nil
}

// readUnique reads a unique insert's row; nil when there was none.
func readUnique(row pgx.Row) (*driver.JobInsertResult, error) {
	var dup bool
	j, err := scanRow(row, &dup)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &driver.JobInsertResult{Job: j, Duplicate: dup}, nil
}

// insertUniqueAgain runs a unique job's insert until it inserts the job or
// sees the live job it conflicts with. Each run is a new statement with a
// new snapshot (in READ COMMITTED), which sees a conflicting job committed
// while the previous run was under way.
func insertUniqueAgain(ctx context.Context, db dbtx, q *queries, j *driver.JobInsert) (*driver.JobInsertResult, error) {
	for range uniqueTries {
		res, err := readUnique(db.QueryRow(ctx, q.insertUnique, uniqueArgs(j)...))
		if err != nil || res != nil {
			return res, err
		}
	}
	return nil, fmt.Errorf("job %s: unique key %q conflicts with a job this transaction cannot see (is it REPEATABLE READ or SERIALIZABLE?)", j.ID, j.UniqueKey)
}

// insertArgs returns the parallel arrays of the insertRows statement.
func insertArgs(jobs []*driver.JobInsert) []any {
	n := len(jobs)
	var (
		ids                      = make([]pgtype.UUID, n)
		topics, queues, payloads = make([]string, n), make([]string, n), make([]string, n)
		priorities, maxRetries   = make([]int32, n), make([]int32, n)
		runAts, createdAts       = make([]time.Time, n), make([]time.Time, n)
	)
	for i, j := range jobs {
		ids[i], _ = parseUUID(j.ID) // checked by JobInsertMany
		topics[i], queues[i], payloads[i] = j.Topic, j.Queue, string(j.Payload)
		priorities[i], maxRetries[i] = int32(j.Priority), int32(j.MaxRetries)
		runAts[i], createdAts[i] = j.RunAt, j.CreatedAt
	}
	return []any{ids, topics, queues, priorities, payloads, maxRetries, runAts, createdAts}
}

// uniqueArgs returns the arguments of the insertUnique statement.
func uniqueArgs(j *driver.JobInsert) []any {
	id, _ := parseUUID(j.ID) // checked by JobInsertMany
	return []any{id, j.Topic, j.Queue, j.Priority, string(j.Payload), j.MaxRetries,
		j.RunAt, j.CreatedAt, j.UniqueKey, nullTags(j.Tags), nullText(j.Metadata),
		nullString(j.Key), nullString(string(j.Sequence)), nullString(j.GroupID), nullString(j.Task), nullString(j.CallbackOf)}
}

// nullTags returns tags as a text array parameter, NULL when empty.
func nullTags(tags []string) []string {
	if len(tags) == 0 {
		return nil
	}
	return tags
}

// tagged reports whether any of jobs has tags, metadata, a key, a
// sequence, a group or a group it is a callback of: the columns of the
// insertTagged statement.
func tagged(jobs []*driver.JobInsert) bool {
	for _, j := range jobs {
		if len(j.Tags) > 0 || j.Metadata != nil || j.Key != "" || j.Sequence != "" || j.GroupID != "" || j.CallbackOf != "" {
			return true
		}
	}
	return false
}

// nullUUID returns id as a uuid parameter, NULL when empty.
func nullUUID(id string) pgtype.UUID {
	u, _ := parseUUID(id) // invalid when empty; checked by the client otherwise
	return u
}

// queueInsertRows queues on b the insert of jobs, which have no unique
// key (see insertRowsStmt).
func queueInsertRows(b *pgx.Batch, q *queries, jobs []*driver.JobInsert) {
	sql, args := insertRowsStmt(q, jobs)
	b.Queue(sql, args...)
}

// insertRowsStmt returns the statement inserting jobs, which have no
// unique key, and its arguments: insertWaiting when any waits for others,
// insertTagged when any has tags or metadata, else insertRows.
func insertRowsStmt(q *queries, jobs []*driver.JobInsert) (string, []any) {
	switch {
	case waiting(jobs):
		return q.insertWaiting, waitingArgs(jobs)
	case tagged(jobs):
		return q.insertTagged, taggedArgs(jobs)
	}
	return q.insertRows, insertArgs(jobs)
}

// waiting reports whether any of jobs waits for others.
func waiting(jobs []*driver.JobInsert) bool {
	return slices.ContainsFunc(jobs, func(j *driver.JobInsert) bool { return len(j.DependsOn) > 0 })
}

// waitColumns returns what a job stores to wait for others: its
// dependencies as a JSON array, its policy, and the run time it was
// enqueued with; all NULL for a job that waits for none.
func waitColumns(j *driver.JobInsert) (deps, policy pgtype.Text, runAt pgtype.Timestamptz) {
	if len(j.DependsOn) == 0 {
		return deps, policy, runAt
	}
	deps = pgtype.Text{String: string(rowcodec.StringsJSON(j.DependsOn)), Valid: true}
	return deps, pgtype.Text{String: string(j.OnDependencyFailure), Valid: true},
		pgtype.Timestamptz{Time: j.RunAt, Valid: true}
}

// waitingArgs returns the parallel arrays of the insertWaiting statement.
func waitingArgs(jobs []*driver.JobInsert) []any {
	args := taggedArgs(jobs)
	runAts := args[6].([]time.Time)
	deps, policies := make([]pgtype.Text, len(jobs)), make([]pgtype.Text, len(jobs))
	waitRunAts := make([]pgtype.Timestamptz, len(jobs))
	for i, j := range jobs {
		deps[i], policies[i], waitRunAts[i] = waitColumns(j)
		if deps[i].Valid {
			runAts[i] = driver.WaitingRunAt
		}
	}
	return append(args, deps, policies, waitRunAts)
}

// taggedArgs returns the parallel arrays of the insertTagged statement.
func taggedArgs(jobs []*driver.JobInsert) []any {
	n := len(jobs)
	tags, metadata := make([]pgtype.Text, n), make([]pgtype.Text, n)
	keys, sequences := make([]pgtype.Text, n), make([]pgtype.Text, n)
	groups, tasks, callbacks := make([]pgtype.Text, n), make([]pgtype.Text, n), make([]pgtype.Text, n)
	for i, j := range jobs {
		tags[i], metadata[i] = nullText(rowcodec.StringsJSON(j.Tags)), nullText(j.Metadata)
		keys[i], sequences[i] = nullString(j.Key), nullString(string(j.Sequence))
		groups[i], tasks[i], callbacks[i] = nullString(j.GroupID), nullString(j.Task), nullString(j.CallbackOf)
	}
	return append(insertArgs(jobs), tags, metadata, keys, sequences, groups, tasks, callbacks)
}

// copyColumnsFor returns the columns COPY fills for jobs: copyColumns,
// tags and metadata when any of jobs has them, and what a job waits for
// when any waits.
func copyColumnsFor(jobs []*driver.JobInsert) []string {
	cols := copyColumns
	if tagged(jobs) {
		cols = append(slices.Clip(cols), "tags", "metadata", "key", "sequence", "group_id", "task", "callback_of")
	}
	if waiting(jobs) {
		cols = append(slices.Clip(cols), "depends_on", "wait_policy", "wait_run_at")
	}
	return cols
}

// copySource returns the rows COPY inserts, in the order of copyColumns.
func copySource(jobs []*driver.JobInsert) pgx.CopyFromSource {
	i := -1
	full, waits := tagged(jobs), waiting(jobs)
	row := make([]any, len(copyColumnsFor(jobs)))
	return pgx.CopyFromFunc(func() ([]any, error) {
		i++
		if i >= len(jobs) {
			return nil, nil
		}
		j := jobs[i]
		// A uuid, not the string: pgx encodes a string as a uuid only
		// after failing to, and building that error took a fifth of a
		// batch insert's CPU.
		id, _ := parseUUID(j.ID) // checked by JobInsertMany
		row[0], row[1], row[2], row[3], row[4] = id, j.Topic, j.Queue, int32(j.Priority), string(j.Payload)
		row[5], row[6], row[7], row[8], row[9] = "pending", int32(0), int32(j.MaxRetries), j.RunAt, j.CreatedAt
		rest := row[10:]
		if full {
			rest[0], rest[1], rest[2], rest[3] = nullTags(j.Tags), nil, nullString(j.Key), nullString(string(j.Sequence))
			if j.Metadata != nil {
				rest[1] = string(j.Metadata)
			}
			rest[4], rest[5], rest[6] = nullUUID(j.GroupID), nullString(j.Task), nullUUID(j.CallbackOf)
			rest = rest[7:]
		}
		if waits {
			deps, policy, runAt := waitColumns(j)
			rest[0], rest[1], rest[2] = deps, policy, runAt
			if deps.Valid {
				row[8] = driver.WaitingRunAt
			}
		}
		return row, nil
	})
}
