package pgxdriver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/rowcodec"
)

// JobFinalize ends every claim of the batch with one UPDATE over arrays:
// the plain completions with a lean one, the others with one that can
// write anything, both in one round trip and one transaction. Plain
// completions of jobs kept for no time, in no group, are one DELETE
// instead (see completeDeleteSQL).
func (e *executor) JobFinalize(ctx context.Context, p *driver.JobFinalizeParams) ([]bool, error) {
	const op = "finalize"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("pgxdriver: finalize: nil params")
	}
	matched := make([]bool, len(p.Jobs))
	full, plain, withIns := newFinalizeArrays(0), newFinalizeArrays(len(p.Jobs)), newFinalizeArrays(0)
	gone := newFinalizeArrays(0)
	var ins insertArrays
	for i, it := range p.Jobs {
		if it == nil {
			return nil, fmt.Errorf("pgxdriver: finalize: item %d is nil", i)
		}
		id, ok := parseUUID(it.ID)
		if !ok || !driver.Matchable(it.LockedBy) {
			continue // names no claim
		}
		var err error
		switch {
		case len(it.Insert) > 0:
			if err = ins.add(len(withIns.index)+1, it.Insert); err == nil {
				err = withIns.addFull(i, id, it)
			}
		case it.Status == driver.StatusCompleted && it.Error == nil && it.Result == nil && it.Delete &&
			it.GroupID == "" && (len(gone.index) == 0 || it.LockedBy == gone.lockedBy[0]):
			gone.add(i, id, it)
		case it.Status == driver.StatusCompleted && it.Error == nil && it.Result == nil &&
			(len(plain.index) == 0 || it.LockedBy == plain.lockedBy[0]):
			err = plain.addPlain(i, id, it)
		default:
			err = full.addFull(i, id, it)
		}
		if err != nil {
			return nil, fmt.Errorf("pgxdriver: finalize: item %d: %w", i, err)
		}
	}
	var stmts []batchStmt
	if len(plain.index) > 0 {
		q := e.d.q.complete
		if plain.withLogs {
			q = e.d.q.completeLogs
		}
		stmts = append(stmts, batchStmt{q, plain.completeArgs(), scanMatched(matched, plain.index)})
	}
	if len(gone.index) > 0 {
		stmts = append(stmts, batchStmt{e.d.q.completeDelete, []any{gone.ids, gone.attempts, gone.lockedBy[0], gone.attempteds},
			scanMatched(matched, gone.index)})
	}
	if len(full.index) > 0 {
		stmts = append(stmts, batchStmt{e.d.q.finalize, full.finalizeArgs(), scanMatched(matched, full.index)})
	}
	if len(withIns.index) > 0 {
		stmts = append(stmts, batchStmt{e.d.q.finalizeIns, append(withIns.finalizeArgs(), ins.args()...),
			scanMatched(matched, withIns.index)})
	}
	if len(stmts) == 0 {
		return matched, nil
	}
	var after []batchStmt
	if del := deleteArgs(p.Jobs, gone.index); del != nil {
		// Retention of none: deleted after the statements above, in
		// their transaction (see driver.JobFinalize.Delete), and after
		// the groups they finish settled, which read their jobs.
		after = append(after, batchStmt{`DELETE FROM ` + e.d.Table() + ` AS j
USING unnest($1::uuid[], $2::text[], $3::int[]) AS d(id, status, attempt)
WHERE j.id = d.id AND j.status = d.status AND j.attempt = d.attempt`, del, drain})
	}
	queues, err := e.finalizeStmts(ctx, p, stmts, after, matched)
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	queues = append(queues, ins.matchedQueues(matched, withIns.index)...)
	if len(queues) > 0 {
		e.notifyAfter(queues)
	}
	return matched, nil
}

// finalizeStmts runs the statements of a finalize, then after: in one
// round trip when no item ends a job of a group, else in a transaction
// that settles the groups of the items that matched with a final status
// (see driver.JobFinalize.GroupID) between the two, and returns the
// queues of the callbacks it inserted.
func (e *executor) finalizeStmts(ctx context.Context, p *driver.JobFinalizeParams, stmts, after []batchStmt, matched []bool) ([]string, error) {
	var now time.Time
	grouped := false
	for _, it := range p.Jobs {
		if it.GroupID != "" && it.Status.Finished() {
			grouped = true
			now = maxTime(now, it.FinalizedAt)
		}
	}
	if !grouped {
		return nil, e.queryBatch(ctx, lazy, append(stmts, after...)...)
	}
	var queues []string
	err := e.atomic(ctx, func(db dbtx) error {
		in := &executor{d: e.d, db: db, inTx: true}
		if !e.inTx {
			if _, err := db.Exec(ctx, lazy); err != nil {
				return err
			}
		}
		if err := in.queryEach(ctx, stmts...); err != nil {
			return err
		}
		var ids []pgtype.UUID
		for i, it := range p.Jobs {
			if id, ok := parseUUID(it.GroupID); ok && matched[i] && it.Status.Finished() && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
		if len(ids) > 0 {
			var err error
			if _, queues, err = e.settle(ctx, db, ids, now); err != nil {
				return err
			}
		}
		return in.queryEach(ctx, after...)
	})
	return queues, err
}

// maxTime returns the later of a and b.
func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// deleteArgs returns the arrays of IDs, statuses and attempts of the
// items to delete once finalized, or nil when there are none. deleted
// holds the indexes, in order, of items completeDeleteSQL deletes itself.
func deleteArgs(items []*driver.JobFinalize, deleted []int) []any {
	var (
		ids      []pgtype.UUID
		statuses []string
		attempts []int32
	)
	for i, it := range items {
		if len(deleted) > 0 && deleted[0] == i {
			deleted = deleted[1:]
			continue
		}
		if !it.Delete || !it.Status.Finished() {
			continue
		}
		if id, ok := parseUUID(it.ID); ok {
			ids, statuses, attempts = append(ids, id), append(statuses, string(it.Status)), append(attempts, int32(it.Attempt))
		}
	}
	if ids == nil {
		return nil
	}
	return []any{ids, statuses, attempts}
}

// insertArrays are the parallel arrays of the jobs finalizeInsertSQL
// inserts, each with the number of its item among the statement's items.
type insertArrays struct {
	item []int64
	jobs []*driver.JobInsert
}

// add appends the jobs of the statement's item number n.
func (a *insertArrays) add(n int, jobs []*driver.JobInsert) error {
	for k, j := range jobs {
		switch {
		case j == nil:
			return fmt.Errorf("insert %d is nil", k)
		case j.UniqueKey != "":
			return fmt.Errorf("insert %d has a unique key", k)
		case j.Priority != int(int32(j.Priority)) || j.MaxRetries != int(int32(j.MaxRetries)):
			return fmt.Errorf("insert %d: priority or max retries out of the 32-bit range", k)
		}
		if _, ok := parseUUID(j.ID); !ok {
			return fmt.Errorf("insert %d: ID %q is not a UUID", k, j.ID)
		}
		a.item = append(a.item, int64(n))
		a.jobs = append(a.jobs, j)
	}
	return nil
}

// args returns the arrays, after the finalize statement's own.
func (a *insertArrays) args() []any {
	return append([]any{a.item}, taggedArgs(a.jobs)...)
}

// matchedQueues returns the queues of the jobs inserted for items that
// matched (index maps item numbers to items).
func (a *insertArrays) matchedQueues(matched []bool, index []int) []string {
	var queues []string
	for k, j := range a.jobs {
		if matched[index[a.item[k]-1]] && !slices.Contains(queues, j.Queue) {
			queues = append(queues, j.Queue)
		}
	}
	return queues
}

// notifyAfter has queues notified of new jobs once they are committed: on
// the pool at once. In a caller's transaction nothing is sent: a statement
// that failed there would abort the caller's transaction, and a client
// finds the jobs at its next poll.
func (e *executor) notifyAfter(queues []string) {
	if !e.inTx {
		e.d.notifyLater(queues)
	}
}

// finalizeArrays are the parallel arrays of completeSQL or finalizeSQL,
// one element per item, and each element's index among the items.
type finalizeArrays struct {
	index                            []int
	ids                              []pgtype.UUID
	attempts, giveBack               []int32
	lockedBy, statuses, fromStatus   []string
	runAts, finalizedAts, attempteds []pgtype.Timestamptz
	errs, results, logs              []pgtype.Text
	logged                           []pgtype.Int4
	// withLogs is set when the completions of completeSQL carry logs.
	withLogs bool
}

// newFinalizeArrays returns arrays with room for n items.
func newFinalizeArrays(n int) *finalizeArrays {
	return &finalizeArrays{
		index: make([]int, 0, n), ids: make([]pgtype.UUID, 0, n), attempts: make([]int32, 0, n),
		lockedBy: make([]string, 0, n), attempteds: make([]pgtype.Timestamptz, 0, n),
		finalizedAts: make([]pgtype.Timestamptz, 0, n),
	}
}

// add appends the columns both statements take (for completeSQL, only the
// first holder counts).
func (a *finalizeArrays) add(i int, id pgtype.UUID, it *driver.JobFinalize) {
	a.index = append(a.index, i)
	a.ids = append(a.ids, id)
	a.attempts = append(a.attempts, int32(it.Attempt))
	a.lockedBy = append(a.lockedBy, it.LockedBy)
	a.attempteds = append(a.attempteds, pgtype.Timestamptz{Time: it.AttemptedAt, Valid: true})
	a.finalizedAts = append(a.finalizedAts, nullTime(it.FinalizedAt))
}

// addPlain appends an item of completeSQL: with its logs, if it has any
// or an item before it had.
func (a *finalizeArrays) addPlain(i int, id pgtype.UUID, it *driver.JobFinalize) error {
	if it.Logs != nil && !a.withLogs {
		a.withLogs = true
		a.logs = make([]pgtype.Text, len(a.index), cap(a.index))
		a.logged = make([]pgtype.Int4, len(a.index), cap(a.index))
	}
	if a.withLogs {
		if err := a.addLogs(it.Logs); err != nil {
			return err
		}
	}
	a.add(i, id, it)
	return nil
}

// addLogs appends logs, or nothing (nil), to the logs arrays.
func (a *finalizeArrays) addLogs(logs *driver.JobLogs) error {
	var text []byte
	var logged pgtype.Int4
	if logs != nil {
		var err error
		if text, err = rowcodec.LogsJSON(logs); err != nil {
			return err
		}
		logged = pgtype.Int4{Int32: int32(logs.Logged()), Valid: true}
	}
	a.logs = append(a.logs, nullText(text))
	a.logged = append(a.logged, logged)
	return nil
}

// addFull appends an item of finalizeSQL.
func (a *finalizeArrays) addFull(i int, id pgtype.UUID, it *driver.JobFinalize) error {
	var e []byte
	if it.Error != nil {
		var err error
		if e, err = errorJSON(it.Error); err != nil {
			return err
		}
	}
	back := int32(0)
	if it.Snooze && it.Status == driver.StatusPending {
		back = 1
	}
	a.add(i, id, it)
	a.fromStatus = append(a.fromStatus, string(driver.StatusProcessing))
	a.statuses = append(a.statuses, string(it.Status))
	a.runAts = append(a.runAts, pgtype.Timestamptz{Time: it.RunAt, Valid: true})
	a.giveBack = append(a.giveBack, back)
	a.errs = append(a.errs, nullText(e))
	a.results = append(a.results, nullText(it.Result))
	return a.addLogs(it.Logs)
}

func (a *finalizeArrays) completeArgs() []any {
	if a.withLogs {
		return []any{a.ids, a.attempts, a.lockedBy[0], a.attempteds, a.finalizedAts, a.logs, a.logged}
	}
	return []any{a.ids, a.attempts, a.lockedBy[0], a.attempteds, a.finalizedAts}
}

func (a *finalizeArrays) finalizeArgs() []any {
	return []any{a.ids, a.attempts, a.lockedBy, a.statuses, a.runAts, a.finalizedAts, a.giveBack, a.errs, a.results,
		a.fromStatus, a.attempteds, a.logs, a.logged}
}
