package pgxdriver

import (
	"cmp"
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

// JobClaim claims jobs with one UPDATE over a SELECT ... FOR UPDATE SKIP
// LOCKED, so claimers running at once never wait for each other's rows.
func (e *executor) JobClaim(ctx context.Context, p *driver.JobClaimParams) ([]*driver.JobRow, error) {
	const op = "claim"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("pgxdriver: claim: nil params")
	}
	qctx, cancel := e.detach(ctx)
	defer cancel()
	var jobs []*driver.JobRow
	err := e.queryBatch(qctx, lazy, batchStmt{e.d.q.claim, []any{p.ClientID, p.LockedUntil, p.Now, p.Queue, p.Topics, p.Limit},
		func(rows pgx.Rows) (err error) {
			jobs, err = scanRows(rows)
			return err
		}})
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	slices.SortFunc(jobs, func(a, b *driver.JobRow) int {
		if c := cmp.Compare(a.Priority, b.Priority); c != 0 {
			return c
		}
		if c := a.RunAt.Compare(b.RunAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return jobs, nil
}

// JobFinalize ends every claim of the batch with one UPDATE over arrays:
// the plain completions with a lean one, the others with one that can
// write anything, both in one round trip and one transaction.
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
	var ins insertArrays
	for i, it := range p.Jobs {
		if it == nil {
			return nil, fmt.Errorf("pgxdriver: finalize: item %d is nil", i)
		}
		id, ok := parseUUID(it.ID)
		if !ok {
			continue // names no job
		}
		var err error
		switch {
		case len(it.Insert) > 0:
			if err = ins.add(len(withIns.index)+1, it.Insert); err == nil {
				err = withIns.addFull(i, id, it)
			}
		case it.Status == driver.StatusCompleted && it.Error == nil && it.Result == nil && it.Logs == nil &&
			(len(plain.index) == 0 || it.LockedBy == plain.lockedBy[0]):
			plain.add(i, id, it)
		default:
			err = full.addFull(i, id, it)
		}
		if err != nil {
			return nil, fmt.Errorf("pgxdriver: finalize: item %d: %w", i, err)
		}
	}
	var stmts []batchStmt
	if len(plain.index) > 0 {
		stmts = append(stmts, batchStmt{e.d.q.complete, plain.completeArgs(), scanMatched(matched, plain.index)})
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
	if err := e.queryBatch(ctx, lazy, stmts...); err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	if queues := ins.matchedQueues(matched, withIns.index); len(queues) > 0 {
		e.notifyAfter(queues)
	}
	return matched, nil
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
	var logs []byte
	if it.Logs != nil {
		var err error
		if logs, err = rowcodec.LogsJSON(it.Logs); err != nil {
			return err
		}
	}
	a.logs = append(a.logs, nullText(logs))
	return nil
}

func (a *finalizeArrays) completeArgs() []any {
	return []any{a.ids, a.attempts, a.lockedBy[0], a.attempteds, a.finalizedAts}
}

func (a *finalizeArrays) finalizeArgs() []any {
	return []any{a.ids, a.attempts, a.lockedBy, a.statuses, a.runAts, a.finalizedAts, a.giveBack, a.errs, a.results,
		a.fromStatus, a.attempteds, a.logs}
}

// JobHeartbeat extends the leases of a client's jobs with one UPDATE: over
// the lease index, or through the primary key when given the IDs.
func (e *executor) JobHeartbeat(ctx context.Context, p *driver.JobHeartbeatParams) (int, error) {
	const op = "heartbeat"
	if err := e.start(ctx, op); err != nil {
		return 0, err
	}
	if p == nil {
		return 0, errors.New("pgxdriver: heartbeat: nil params")
	}
	sql, args := e.d.q.heartbeat, []any{p.ClientID, p.LockedUntil}
	if p.IDs != nil {
		sql, args = e.d.q.heartbeatIDs, append(args, uuids(p.IDs))
	}
	tag, err := e.db.Exec(ctx, sql, args...)
	if err != nil {
		return 0, wrapErr(ctx, op, err)
	}
	return int(tag.RowsAffected()), nil
}

// JobRescue takes back expired claims with one UPDATE over a SELECT ...
// FOR UPDATE SKIP LOCKED, so rescuers running at once take different jobs.
func (e *executor) JobRescue(ctx context.Context, p *driver.JobRescueParams) ([]*driver.JobRow, error) {
	const op = "rescue"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("pgxdriver: rescue: nil params")
	}
	ae := p.Error
	ae.StartedAt, ae.ClientID = time.Time{}, "" // the job's own are recorded
	e1, err := errorJSON(&ae)
	if err != nil {
		return nil, fmt.Errorf("pgxdriver: rescue: %w", err)
	}
	qctx, cancel := e.detach(ctx)
	defer cancel()
	rows, err := e.db.Query(qctx, e.d.q.rescue, p.Now, string(e1), p.Limit)
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	jobs, err := scanRows(rows)
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	return jobs, nil
}

// JobGet reads one job. An ID that is not a UUID names no job.
func (e *executor) JobGet(ctx context.Context, p *driver.JobGetParams) (*driver.JobRow, error) {
	const op = "get"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("pgxdriver: get: nil params")
	}
	id, ok := parseUUID(p.ID)
	if !ok {
		return nil, fmt.Errorf("pgxdriver: get %s: %w", p.ID, driver.ErrNotFound)
	}
	j, err := scanRow(e.db.QueryRow(ctx, e.d.q.get, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("pgxdriver: get %s: %w", p.ID, driver.ErrNotFound)
	}
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	return j, nil
}
