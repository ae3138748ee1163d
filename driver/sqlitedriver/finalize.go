package sqlitedriver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/rowcodec"
)

// JobFinalize ends claims in one transaction: with one fenced UPDATE for
// the items a busy queue's batches mostly hold (see splitFinalize), one
// prepared, fenced UPDATE for each of the rest, then one query counting
// the jobs those moved (see migration 0004).
func (e *executor) JobFinalize(ctx context.Context, p *driver.JobFinalizeParams) ([]bool, error) {
	const op = "finalize"
	if p == nil {
		return nil, errors.New("sqlitedriver: finalize: nil params")
	}
	if e.d.err != nil {
		return nil, e.d.err
	}
	matched := make([]bool, len(p.Jobs))
	if len(p.Jobs) == 0 {
		return matched, nil
	}
	s, err := splitFinalize(p.Jobs)
	if err != nil {
		return nil, err
	}
	if err := checkInserts(p.Jobs); err != nil {
		return nil, err
	}
	var inserted []driver.JobInsertResult
	queries := []string{s.batchQuery(e.d.q), e.d.q.finalize, e.d.q.countIDs, e.d.q.count, e.d.q.deleteDone}
	err = e.writeTx(ctx, op, queries, func(r runner) error {
		var counts countMoves
		if s.list != nil {
			if err := s.runBatch(ctx, r, matched, &counts); err != nil {
				return err
			}
		}
		if err := e.finalizeRest(ctx, r, p, s, matched, &counts); err != nil {
			return err
		}
		if err := counts.apply(ctx, r); err != nil {
			return err
		}
		if inserted, err = insertFor(ctx, r, p.Jobs, matched); err != nil {
			return err
		}
		callbacks, err := e.settleFinalized(ctx, r, p.Jobs, matched)
		if err != nil {
			return err
		}
		inserted = append(inserted, callbacks...)
		// After the settle, which reads the groups' jobs.
		return e.deleteFinalized(ctx, r, p.Jobs)
	})
	if err != nil {
		return nil, err
	}
	if len(inserted) > 0 {
		e.d.hub.notifyInserted(inserted, e.tx == nil)
	}
	return matched, nil
}

// finalizeRest runs the statement for one job for each item s did not
// batch, marks in matched those that matched, and adds their moves to
// counts.
func (e *executor) finalizeRest(ctx context.Context, r runner, p *driver.JobFinalizeParams, s *finalizeSplit,
	matched []bool, counts *countMoves) error {
	if len(s.rest) == 0 {
		return nil
	}
	ran := make([]bool, len(s.rest))
	if err := execAll(ctx, r, e.d.q.finalize, s.rest, ran); err != nil {
		return err
	}
	ids := make([]string, 0, len(s.rest))
	for k, ok := range ran {
		if ok {
			matched[s.restAt[k]] = true
			ids = append(ids, p.Jobs[s.restAt[k]].ID)
		}
	}
	if len(ids) > 0 {
		return counts.addIDs(ctx, r, driver.StatusProcessing, ids)
	}
	return nil
}

// deleteFinalized deletes the jobs of the items whose retention is none,
// once their outcomes are recorded (see driver.JobFinalize.Delete), in one
// statement. The delete trigger of the counts counts them out.
func (e *executor) deleteFinalized(ctx context.Context, r runner, items []*driver.JobFinalize) error {
	var list []byte
	for _, it := range items {
		if !it.Delete || !it.Status.Finished() {
			continue
		}
		list = append(list, ',', '[')
		list = driver.AppendJSONString(list, it.ID)
		list = append(list, ',')
		list = driver.AppendJSONString(list, string(it.Status))
		list = append(list, ',')
		list = strconv.AppendInt(list, int64(it.Attempt), 10)
		list = append(list, ']')
	}
	if list == nil {
		return nil
	}
	list[0] = '['
	_, err := r.exec(ctx, e.d.q.deleteDone, string(append(list, ']')))
	return err
}

// checkInserts checks the jobs the items would insert.
func checkInserts(items []*driver.JobFinalize) error {
	for i, it := range items {
		if it == nil {
			continue // splitFinalize reports it
		}
		for k, j := range it.Insert {
			if j == nil || j.UniqueKey != "" {
				return fmt.Errorf("sqlitedriver: finalize: item %d: insert %d: nil, or with a unique key", i, k)
			}
		}
	}
	return nil
}

// settleFinalized settles, through r, the groups of the items that
// matched with a final status (see driver.JobFinalize.GroupID), and
// returns the callbacks it inserted.
func (e *executor) settleFinalized(ctx context.Context, r runner, items []*driver.JobFinalize, matched []bool) ([]driver.JobInsertResult, error) {
	var ids []string
	var now time.Time
	for i, it := range items {
		if it.GroupID != "" && matched[i] && it.Status.Finished() {
			if !slices.Contains(ids, it.GroupID) {
				ids = append(ids, it.GroupID)
			}
			if it.FinalizedAt.After(now) {
				now = it.FinalizedAt
			}
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	_, inserted, err := e.settle(ctx, r, ids, now)
	return inserted, err
}

// insertFor inserts through r the jobs of the items that matched, and
// returns their results.
func insertFor(ctx context.Context, r runner, items []*driver.JobFinalize, matched []bool) ([]driver.JobInsertResult, error) {
	var jobs []*driver.JobInsert
	for i, it := range items {
		if matched[i] {
			jobs = append(jobs, it.Insert...)
		}
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	results, plain, _, err := rowcodec.SplitInsert(jobs)
	if err != nil {
		return nil, err
	}
	for _, st := range planInsert(r.d.q, plain) {
		if _, err := r.exec(ctx, st.query, st.args...); err != nil {
			return nil, err
		}
	}
	return results, nil
}

// finalizeSplit is a finalize batch split between the statement for many
// jobs (queries.finalizeBatch) and the statement for one.
type finalizeSplit struct {
	// lead is the first item of the statement for many, whose holder and
	// status all its items share; list is their JSON (nil when none), and
	// at maps each one's ID to its index in the batch.
	lead *driver.JobFinalize
	list []byte
	at   map[string]int
	// rest are the variables of the statement for one, for the items at
	// restAt, in order.
	rest   [][]any
	restAt []int
	// logs is set when an item of the statement for many has logs.
	logs bool
}

// batchQuery returns the statement for many jobs that s needs.
func (s *finalizeSplit) batchQuery(q *queries) string {
	if s.logs {
		return q.finalizeBatchLogs
	}
	return q.finalizeBatch
}

// splitFinalize splits items: those that end without an error or a snooze,
// in a final status, with the holder and status of the first of them (in a
// busy queue, most of a batch) go to the statement for many jobs, at most
// one per job, so that the IDs it returns tell which items matched; the
// rest, checked, to the statement for one.
func splitFinalize(items []*driver.JobFinalize) (*finalizeSplit, error) {
	s := &finalizeSplit{at: make(map[string]int, len(items))}
	var list []byte
	for i, j := range items {
		if batchable(j) && (s.lead == nil || j.LockedBy == s.lead.LockedBy && j.Status == s.lead.Status) {
			if _, twice := s.at[j.ID]; !twice {
				if s.lead == nil {
					s.lead = j
					list = make([]byte, 0, 128*len(items))
				}
				s.at[j.ID] = i
				var err error
				if list, err = appendBatchItem(list, j); err != nil {
					return nil, fmt.Errorf("sqlitedriver: finalize: item %d: %w", i, err)
				}
				s.logs = s.logs || j.Logs != nil
				continue
			}
		}
		a, err := finalizeArgs(j)
		if err != nil {
			return nil, fmt.Errorf("sqlitedriver: finalize: item %d: %w", i, err)
		}
		s.rest, s.restAt = append(s.rest, a), append(s.restAt, i)
	}
	if list != nil {
		list[0] = '['
		s.list = append(list, ']')
	}
	return s, nil
}

// appendBatchItem appends to list a comma and j as an item of
// finalizeBatchSQL's JSON array: [id, attempt, attempted_at, finalized_at,
// result, logs, logged], the result and logs as JSON text in strings.
// Written by hand rather than by json.Marshal, whose reflection over
// slices of interfaces was a visible part of a completion's cost.
func appendBatchItem(list []byte, j *driver.JobFinalize) ([]byte, error) {
	list = append(list, ',', '[')
	list = driver.AppendJSONString(list, j.ID)
	list = append(list, ',')
	list = strconv.AppendInt(list, int64(j.Attempt), 10)
	list = append(list, ',')
	list = strconv.AppendInt(list, micros(j.AttemptedAt), 10)
	list = append(list, ',')
	if j.FinalizedAt.IsZero() {
		list = append(list, "null"...)
	} else {
		list = strconv.AppendInt(list, micros(j.FinalizedAt), 10)
	}
	list = append(list, ',')
	if j.Result == nil {
		list = append(list, "null"...)
	} else {
		list = driver.AppendJSONString(list, string(j.Result))
	}
	if j.Logs == nil {
		return append(list, ",null,null]"...), nil
	}
	b, err := rowcodec.LogsJSON(j.Logs)
	if err != nil {
		return nil, err
	}
	list = append(list, ',')
	list = driver.AppendJSONString(list, string(b))
	list = append(list, ',')
	list = strconv.AppendInt(list, int64(j.Logs.Logged()), 10)
	return append(list, ']'), nil
}

// batchable reports whether j ends without an error or a snooze, in a
// final status.
func batchable(j *driver.JobFinalize) bool {
	if j == nil || j.Error != nil || j.Snooze {
		return false
	}
	switch j.Status {
	case driver.StatusCompleted, driver.StatusFailed, driver.StatusCancelled:
		return true
	}
	return false
}

// runBatch runs the statement for many jobs through r, marks in matched the
// items it ended, and adds their moves to counts.
func (s *finalizeSplit) runBatch(ctx context.Context, r runner, matched []bool, counts *countMoves) error {
	rows, err := r.query(ctx, s.batchQuery(r.d.q), string(s.list), s.lead.LockedBy, string(s.lead.Status))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, queue, topic string
		if err := rows.Scan(&id, &queue, &topic); err != nil {
			return err
		}
		matched[s.at[id]] = true
		counts.add(driver.StatusProcessing, s.lead.Status, queue, topic)
	}
	return rows.Close()
}

// execEach runs query, which changes at most one row, once with each of
// args, and returns whether each run changed a row. Through the driver's
// handle, several runs share one transaction of their own, so they cost one
// commit.
func (e *executor) execEach(ctx context.Context, op, query string, args [][]any) ([]bool, error) {
	matched := make([]bool, len(args))
	if len(args) == 0 {
		return matched, nil
	}
	run := func(r runner) error { return execAll(ctx, r, query, args, matched) }
	var err error
	if len(args) == 1 {
		err = e.write(ctx, op, run)
	} else {
		err = e.writeTx(ctx, op, []string{query}, run)
	}
	if err != nil {
		return nil, err
	}
	return matched, nil
}

// execAll runs query, which changes at most one row, once with each of
// args through r, and records in matched whether each run changed a row.
func execAll(ctx context.Context, r runner, query string, args [][]any, matched []bool) error {
	exec, done := r.execer(ctx, query)
	defer done()
	for i, a := range args {
		res, err := exec(a...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		matched[i] = n == 1
	}
	return nil
}

// finalizeArgs returns the variables of the finalize statement for j.
func finalizeArgs(j *driver.JobFinalize) ([]any, error) {
	if j == nil {
		return nil, errors.New("nil item")
	}
	switch j.Status {
	case driver.StatusPending, driver.StatusCompleted, driver.StatusFailed, driver.StatusCancelled:
	default:
		return nil, fmt.Errorf("job %s: cannot finalize to status %q", j.ID, j.Status)
	}
	var errJSON any
	if j.Error != nil {
		ae := *j.Error
		ae.At = rowcodec.Stored(ae.At)
		ae.StartedAt = rowcodec.Stored(ae.StartedAt)
		b, err := json.Marshal(ae)
		if err != nil {
			return nil, fmt.Errorf("job %s: encode error: %w", j.ID, err)
		}
		errJSON = string(b)
	}
	dec := 0
	if j.Snooze {
		dec = 1
	}
	var logs, logged any
	if j.Logs != nil {
		b, err := rowcodec.LogsJSON(j.Logs)
		if err != nil {
			return nil, fmt.Errorf("job %s: encode logs: %w", j.ID, err)
		}
		logs, logged = string(b), j.Logs.Logged()
	}
	return []any{j.ID, j.Attempt, j.LockedBy, string(j.Status), micros(j.RunAt),
		nullMicros(j.FinalizedAt), dec, errJSON, nullJSON(j.Result), micros(j.AttemptedAt), logs, logged}, nil
}

// JobProgress sets the progress of claims with one prepared, fenced UPDATE
// per item (see execEach).
func (e *executor) JobProgress(ctx context.Context, p *driver.JobProgressParams) ([]bool, error) {
	if p == nil {
		return nil, errors.New("sqlitedriver: progress: nil params")
	}
	if e.d.err != nil {
		return nil, e.d.err
	}
	args := make([][]any, len(p.Jobs))
	for i, u := range p.Jobs {
		if u == nil {
			return nil, fmt.Errorf("sqlitedriver: progress: item %d is nil", i)
		}
		var progress, logs, logged any
		if !u.KeepProgress {
			b, err := rowcodec.ProgressJSON(u)
			if err != nil {
				return nil, fmt.Errorf("sqlitedriver: progress: item %d: %w", i, err)
			}
			progress = string(b)
		}
		if u.Logs != nil {
			b, err := rowcodec.LogsJSON(u.Logs)
			if err != nil {
				return nil, fmt.Errorf("sqlitedriver: progress: item %d: %w", i, err)
			}
			logs, logged = string(b), u.Logs.Logged()
		}
		args[i] = []any{u.ID, u.Attempt, u.LockedBy, progress, logs, logged}
	}
	return e.execEach(ctx, "progress", e.d.q.progress, args)
}
