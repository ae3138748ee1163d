package sqlitedriver

import (
	"context"
	"errors"
	"fmt"
	"math/bits"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/rowcodec"
)

// JobInsertMany inserts jobs without a unique key with multi-row INSERTs,
// and each job with one by an INSERT ... ON CONFLICT DO NOTHING, reading the
// existing live job when nothing was inserted. Through the driver's handle,
// more than one statement runs in a transaction of its own.
func (e *executor) JobInsertMany(ctx context.Context, params *driver.JobInsertManyParams) ([]driver.JobInsertResult, error) {
	const op = "insert"
	if e.d.err != nil {
		return nil, e.d.err
	}
	if params == nil {
		return nil, errors.New("sqlitedriver: insert: nil params")
	}
	jobs := params.Jobs
	results, plain, unique, err := rowcodec.SplitInsert(jobs)
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: insert: %w", err)
	}
	if len(jobs) == 0 {
		return results, nil
	}
	steps := planInsert(e.d.q, plain)
	// Jobs without a unique key are stored waiting by their insert; a
	// unique one, which may turn out a duplicate, by an update after it.
	waits := rowcodec.Waits(jobs)
	var uniqueWaits []int
	for _, i := range waits {
		if jobs[i].UniqueKey != "" {
			uniqueWaits = append(uniqueWaits, i)
		}
	}
	run := func(r runner) error {
		for _, s := range steps {
			if _, err := r.exec(ctx, s.query, s.args...); err != nil {
				return err
			}
		}
		for _, i := range unique {
			dup, err := insertUnique(ctx, r, e.d.q, jobs[i])
			if err != nil {
				return err
			}
			if dup != nil {
				results[i] = driver.JobInsertResult{Job: dup, Duplicate: true}
			} else {
				results[i].Job = rowcodec.NewRow(jobs[i])
			}
		}
		return e.storeWaits(ctx, r, jobs, uniqueWaits, results)
	}

	if len(unique) == 0 && len(steps) == 1 {
		err = e.write(ctx, op, run)
	} else {
		qs := make([]string, 0, len(steps)+2)
		for _, s := range steps {
			qs = append(qs, s.query)
		}
		if len(unique) > 0 {
			qs = append(qs, e.d.q.insertUnique, e.d.q.selectLiveByKey)
		}
		if len(uniqueWaits) > 0 {
			qs = append(qs, e.d.fq.wait)
		}
		err = e.writeTx(ctx, op, qs, run)
	}
	if err != nil {
		return nil, err
	}
	rowcodec.MarkWaiting(results, jobs, waits)
	e.d.hub.notifyInserted(results, e.tx == nil)
	return results, nil
}

// insertStep is one statement of an insert.
type insertStep struct {
	query string
	args  []any
}

// sharedCols are the columns that jobs inserted by one insertShared
// statement have in common.
type sharedCols struct {
	topic, queue         string
	priority, maxRetries int64
	runAt, createdAt     int64
}

func sharedOf(j *driver.JobInsert) sharedCols {
	return sharedCols{j.Topic, j.Queue, int64(j.Priority), int64(j.MaxRetries), micros(j.RunAt), micros(j.CreatedAt)}
}

// planInsert returns the statements inserting jobs, which have no unique
// key: groups of jobs sharing columns with insertShared, the others with
// insertRows, each cut into chunks; jobs with tags, metadata, a key or a
// sequence, or waiting for others, with insertTagged.
func planInsert(q *queries, jobs []*driver.JobInsert) []insertStep {
	full := func(j *driver.JobInsert) bool {
		return len(j.Tags) > 0 || j.Metadata != nil || len(j.DependsOn) > 0 || j.Key != "" || j.Sequence != "" ||
			j.GroupID != "" || j.CallbackOf != ""
	}
	var tagged []*driver.JobInsert
	for i, j := range jobs {
		if full(j) {
			tagged = make([]*driver.JobInsert, 0, len(jobs))
			plain := append([]*driver.JobInsert(nil), jobs[:i]...)
			for _, j := range jobs[i:] {
				if full(j) {
					tagged = append(tagged, j)
				} else {
					plain = append(plain, j)
				}
			}
			jobs = plain
			break
		}
	}
	return appendTaggedSteps(planPlain(q, jobs), q, tagged)
}

// appendTaggedSteps appends to steps the statements inserting jobs with
// tags, metadata, a key or a sequence, or waiting for others, with
// insertTagged: a waiting job is stored waiting by its insert.
func appendTaggedSteps(steps []insertStep, q *queries, jobs []*driver.JobInsert) []insertStep {
	for _, c := range chunks(jobs, insertRowsMax) {
		args := make([]any, 0, len(c)*18)
		for _, j := range c {
			runAt, deps, policy, waitRunAt := micros(j.RunAt), any(nil), any(nil), any(nil)
			if len(j.DependsOn) > 0 {
				runAt, deps, policy, waitRunAt = micros(driver.WaitingRunAt), string(rowcodec.StringsJSON(j.DependsOn)),
					string(j.OnDependencyFailure), micros(j.RunAt)
			}
			args = append(args, j.ID, j.Topic, j.Queue, int64(j.Priority), string(j.Payload),
				int64(j.MaxRetries), runAt, micros(j.CreatedAt), nullJSON(rowcodec.StringsJSON(j.Tags)),
				nullJSON(j.Metadata), nullString(j.Key), nullString(string(j.Sequence)), nullString(j.GroupID),
				nullString(j.Task), nullString(j.CallbackOf), deps, policy, waitRunAt)
		}
		steps = append(steps, insertStep{q.insertTagged[bits.Len(uint(len(c)))-1], args})
	}
	return steps
}

// planPlain returns the statements inserting jobs, which have no unique
// key, tags nor metadata.
func planPlain(q *queries, jobs []*driver.JobInsert) []insertStep {
	if len(jobs) < insertSharedMin {
		return appendRowsSteps(nil, q, jobs)
	}
	var groups [][]*driver.JobInsert
	index := make(map[sharedCols]int)
	for _, j := range jobs {
		k := sharedOf(j)
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], j)
	}
	var steps []insertStep
	var rest []*driver.JobInsert
	for _, g := range groups {
		if len(g) < insertSharedMin {
			rest = append(rest, g...)
			continue
		}
		k := sharedOf(g[0])
		for _, c := range chunks(g, insertSharedMax) {
			args := make([]any, 0, 2*len(c)+6)
			for _, j := range c {
				args = append(args, j.ID, string(j.Payload))
			}
			args = append(args, k.topic, k.queue, k.priority, k.maxRetries, k.runAt, k.createdAt)
			steps = append(steps, insertStep{q.insertShared[bits.Len(uint(len(c)))-1], args})
		}
	}
	return appendRowsSteps(steps, q, rest)
}

// appendRowsSteps appends to steps the statements inserting jobs with
// insertRows.
func appendRowsSteps(steps []insertStep, q *queries, jobs []*driver.JobInsert) []insertStep {
	for _, c := range chunks(jobs, insertRowsMax) {
		args := make([]any, 0, len(c)*8)
		for _, j := range c {
			args = append(args, j.ID, j.Topic, j.Queue, int64(j.Priority), string(j.Payload),
				int64(j.MaxRetries), micros(j.RunAt), micros(j.CreatedAt))
		}
		steps = append(steps, insertStep{q.insertRows[bits.Len(uint(len(c)))-1], args})
	}
	return steps
}

// chunks cuts jobs into chunks whose sizes are powers of two no larger than
// max, largest first.
func chunks(jobs []*driver.JobInsert, max int) [][]*driver.JobInsert {
	var out [][]*driver.JobInsert
	for len(jobs) > 0 {
		n := min(max, 1<<(bits.Len(uint(len(jobs)))-1))
		out = append(out, jobs[:n])
		jobs = jobs[n:]
	}
	return out
}

// insertUnique inserts j unless a live job has its unique key, and returns
// that job if so.
func insertUnique(ctx context.Context, r runner, q *queries, j *driver.JobInsert) (*driver.JobRow, error) {
	res, err := r.exec(ctx, q.insertUnique, j.ID, j.Topic, j.Queue, int64(j.Priority),
		string(j.Payload), int64(j.MaxRetries), micros(j.RunAt), micros(j.CreatedAt), j.UniqueKey,
		nullJSON(rowcodec.StringsJSON(j.Tags)), nullJSON(j.Metadata), nullString(j.Key), nullString(string(j.Sequence)),
		nullString(j.GroupID), nullString(j.Task), nullString(j.CallbackOf))
	if err != nil {
		return nil, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, err
	}
	if n == 1 {
		return nil, nil
	}
	rows, err := r.query(ctx, q.selectLiveByKey, j.UniqueKey)
	if err != nil {
		return nil, err
	}
	found, err := scanRows(rows)
	if err != nil {
		return nil, err
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("job %s: unique key %q conflicts, but %d live jobs hold it", j.ID, j.UniqueKey, len(found))
	}
	return found[0], nil
}
