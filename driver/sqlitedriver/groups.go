package sqlitedriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/groupkit"
	"github.com/sluicehq/sluice/driver/internal/rowcodec"
)

// The statements of groups. {t} is the jobs table, {g} the table of
// groups (see migration 0012). SQLite writes one transaction at a time,
// so a transaction that reads whether a group is done sees every outcome
// written before it.
const (
	groupColumns = `g.id, g.kind, g.name, g.created_at, g.open, g.callbacks, g.settled_at, coalesce(g.outcome, '')`

	// groupInsertSQL stores a group: ?1 id, ?2 kind, ?3 name, ?4
	// created_at, ?5 open, ?6 callbacks (JSON or NULL).
	groupInsertSQL = `INSERT INTO {g} (id, kind, name, created_at, open, callbacks) VALUES (?1, ?2, ?3, ?4, ?5, ?6)`

	groupOpenSQL  = `SELECT open FROM {g} WHERE id = ?1`
	groupCloseSQL = `UPDATE {g} SET open = 0 WHERE id = ?1`

	// groupDoneSQL reads, of the closed, unsettled groups among ?1 (a
	// JSON array), those with no job pending or processing, each with
	// whether one of its jobs failed or was cancelled.
	groupDoneSQL = `SELECT ` + groupColumns + `,
	coalesce((SELECT max(status IN ('failed', 'cancelled')) FROM {t} WHERE group_id = g.id), 0)
FROM {g} AS g WHERE g.id IN (SELECT value FROM json_each(?1)) AND g.settled_at IS NULL AND NOT g.open
	AND NOT EXISTS (SELECT 1 FROM {t} WHERE group_id = g.id AND status IN ('pending', 'processing'))
ORDER BY g.id`

	// groupSettledSQL marks the groups of ?1 (a JSON array of [id,
	// outcome]) settled at ?2.
	groupSettledSQL = `UPDATE {g} SET settled_at = ?2,
	outcome = (SELECT value ->> 1 FROM json_each(?1) WHERE value ->> 0 = {g}.id)
WHERE id IN (SELECT value ->> 0 FROM json_each(?1))`

	// groupRetryIDsSQL reads the jobs of group ?1 a retry requeues.
	groupRetryIDsSQL = `SELECT id FROM {t}
WHERE group_id = ?1 AND (status = 'failed' OR (status = 'cancelled' AND depends_on IS NULL))`

	// groupRewaitSQL makes the cancelled jobs of group ?1 that depend on
	// others wait for them again, with ?2 more retries; ?3 is
	// driver.WaitingRunAt.
	groupRewaitSQL = `UPDATE {t} SET status = 'pending', finalized_at = NULL, wait_policy = 'cancel',
	wait_run_at = run_at, run_at = ?3, max_retries = attempt + ?2
WHERE group_id = ?1 AND status = 'cancelled' AND depends_on IS NOT NULL
RETURNING ` + columns

	// groupUnsettleSQL unsettles group ?1, replacing its callbacks by ?2
	// unless NULL.
	groupUnsettleSQL = `UPDATE {g} SET settled_at = NULL, outcome = NULL, callbacks = coalesce(?2, callbacks) WHERE id = ?1`

	// groupCleanSQL deletes up to ?2 groups settled before ?1 that have no
	// job left.
	groupCleanSQL = `DELETE FROM {g} WHERE id IN (SELECT g.id FROM {g} AS g
	WHERE g.settled_at < ?1 AND NOT EXISTS (SELECT 1 FROM {t} WHERE group_id = g.id) LIMIT ?2)`

	// groupUnsettledSQL reads up to ?1 closed, unsettled groups.
	groupUnsettledSQL = `SELECT id FROM {g} WHERE settled_at IS NULL AND NOT open ORDER BY id LIMIT ?1`

	// groupUnsettledAmongSQL reads up to ?1 closed, unsettled groups among
	// ?2 (a JSON array).
	groupUnsettledAmongSQL = `SELECT id FROM {g} WHERE id IN (SELECT value FROM json_each(?2))
	AND settled_at IS NULL AND NOT open ORDER BY id LIMIT ?1`

	// groupCountsSQL is the counts and times of group g's jobs.
	groupCountsSQL = `(SELECT json_group_object(status, n) FROM (SELECT status, count(*) AS n FROM {t} WHERE group_id = g.id GROUP BY status)),
	(SELECT min(attempted_at) FROM {t} WHERE group_id = g.id),
	(SELECT CASE WHEN max(status IN ('pending', 'processing')) THEN NULL ELSE max(finalized_at) END FROM {t} WHERE group_id = g.id)`

	groupGetSQL = `SELECT ` + groupColumns + `, ` + groupCountsSQL + ` FROM {g} AS g WHERE g.id = ?1`

	// groupListSQL reads up to ?5 groups newest first, of kind ?1 and name
	// ?2 (empty for any), created in [?3, ?4) (NULL for open ends), before
	// the group ?6 (NULL to start).
	groupListSQL = `SELECT ` + groupColumns + `, ` + groupCountsSQL + ` FROM {g} AS g
WHERE (?1 = '' OR g.kind = ?1) AND (?2 = '' OR g.name = ?2) AND (?3 IS NULL OR g.created_at >= ?3)
	AND (?4 IS NULL OR g.created_at < ?4)
	AND (?6 IS NULL OR (g.created_at, g.id) < (SELECT created_at, id FROM {g} WHERE id = ?6))
ORDER BY g.created_at DESC, g.id DESC LIMIT ?5`
)

// groupQueries holds the statements of groups, filled in.
type groupQueries struct {
	insert, open, close, done, settled, unsettled, unsettledAmong, get, list string
	retryIDs, rewait, unsettle, clean                                        string
}

func newGroupQueries(table string) *groupQueries {
	r := strings.NewReplacer("{t}", quoteIdent(table), "{g}", quoteIdent(table+"_groups"))
	return &groupQueries{insert: r.Replace(groupInsertSQL), open: r.Replace(groupOpenSQL), close: r.Replace(groupCloseSQL),
		done: r.Replace(groupDoneSQL), settled: r.Replace(groupSettledSQL), unsettled: r.Replace(groupUnsettledSQL),
		unsettledAmong: r.Replace(groupUnsettledAmongSQL),
		get:            r.Replace(groupGetSQL), list: r.Replace(groupListSQL), retryIDs: r.Replace(groupRetryIDsSQL),
		rewait: r.Replace(groupRewaitSQL), unsettle: r.Replace(groupUnsettleSQL), clean: r.Replace(groupCleanSQL)}
}

// GroupInsert stores a group and inserts its jobs in one transaction.
func (e *executor) GroupInsert(ctx context.Context, p *driver.GroupInsertParams) (*driver.GroupInsertResult, error) {
	const op = "group insert"
	g, jobs, err := groupkit.Prepare(p)
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: %s: %w", op, err)
	}
	callbacks, err := groupkit.CallbacksJSON(g.Callbacks)
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: %s: %w", op, err)
	}
	var inserted []driver.JobInsertResult
	err = e.writeTx(ctx, op, []string{e.d.gq.insert}, func(r runner) error {
		if _, err := r.exec(ctx, e.d.gq.insert, g.ID, string(g.Kind), g.Name, micros(g.CreatedAt), g.Open, nullJSON(callbacks)); err != nil {
			return err
		}
		inserted, err = insertPlain(ctx, r, jobs)
		return err
	})
	if err != nil {
		return nil, err
	}
	e.d.hub.notifyInserted(inserted, e.tx == nil)
	rows := make([]*driver.JobRow, len(inserted))
	for i, res := range inserted {
		rows[i] = res.Job
	}
	return &driver.GroupInsertResult{Group: g, Jobs: rows}, nil
}

// insertPlain inserts jobs, none with a unique key, through r, and
// returns their results.
func insertPlain(ctx context.Context, r runner, jobs []*driver.JobInsert) ([]driver.JobInsertResult, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	results, plain, unique, err := rowcodec.SplitInsert(jobs)
	if err != nil {
		return nil, err
	}
	if len(unique) > 0 {
		return nil, errors.New("a job has a unique key")
	}
	for _, st := range planInsert(r.d.q, plain) {
		if _, err := r.exec(ctx, st.query, st.args...); err != nil {
			return nil, err
		}
	}
	rowcodec.MarkWaiting(results, jobs, rowcodec.Waits(jobs))
	return results, nil
}

// GroupAdd inserts jobs into an open group, in the transaction that reads
// that it is open.
func (e *executor) GroupAdd(ctx context.Context, p *driver.GroupAddParams) ([]*driver.JobRow, error) {
	const op = "group add"
	jobs, err := groupkit.PrepareAdd(p)
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: %s: %w", op, err)
	}
	var inserted []driver.JobInsertResult
	err = e.writeTx(ctx, op, []string{e.d.gq.open}, func(r runner) error {
		var open bool
		switch err := r.queryRow(ctx, e.d.gq.open, []any{p.ID}, &open); {
		case errors.Is(err, errNoRow):
			return driver.ErrNotFound
		case err != nil:
			return err
		case !open:
			return driver.ErrGroupClosed
		}
		inserted, err = insertPlain(ctx, r, jobs)
		return err
	})
	if err != nil {
		return nil, err
	}
	e.d.hub.notifyInserted(inserted, e.tx == nil)
	rows := make([]*driver.JobRow, len(inserted))
	for i, res := range inserted {
		rows[i] = res.Job
	}
	return rows, nil
}

// GroupClose closes a group and settles it at once if none of its jobs is
// live, in one transaction.
func (e *executor) GroupClose(ctx context.Context, p *driver.GroupCloseParams) (*driver.GroupRow, error) {
	const op = "group close"
	var inserted []driver.JobInsertResult
	err := e.writeTx(ctx, op, []string{e.d.gq.close, e.d.gq.done, e.d.gq.settled}, func(r runner) error {
		res, err := r.exec(ctx, e.d.gq.close, p.ID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return cmpErr(err, driver.ErrNotFound)
		}
		_, inserted, err = e.settle(ctx, r, []string{p.ID}, p.Now)
		return err
	})
	if err != nil {
		return nil, err
	}
	e.d.hub.notifyInserted(inserted, e.tx == nil)
	return e.GroupGet(ctx, &driver.GroupGetParams{ID: p.ID})
}

// GroupSettle settles the closed groups that are done, p.Limit at a time
// in one transaction.
func (e *executor) GroupSettle(ctx context.Context, p *driver.GroupSettleParams) ([]*driver.GroupRow, error) {
	const op = "group settle"
	if p == nil || p.Limit < 1 {
		return nil, errors.New("sqlitedriver: group settle: nil params or a limit below 1")
	}
	var ids []string
	err := e.read(ctx, op, func(r runner) (err error) {
		if len(p.IDs) > 0 {
			ids, err = queryStrings(ctx, r, e.d.gq.unsettledAmong, p.Limit, matchableJSON(p.IDs))
			return err
		}
		ids, err = queryStrings(ctx, r, e.d.gq.unsettled, p.Limit)
		return err
	})
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	var settled []*driver.GroupRow
	var inserted []driver.JobInsertResult
	err = e.writeTx(ctx, op, []string{e.d.gq.done, e.d.gq.settled}, func(r runner) (err error) {
		settled, inserted, err = e.settle(ctx, r, ids, p.Now)
		return err
	})
	if err != nil {
		return nil, err
	}
	e.d.hub.notifyInserted(inserted, e.tx == nil)
	return settled, nil
}

// settle settles, through r in its transaction, those of the groups ids
// that are closed, unsettled and done: it inserts their callbacks and
// marks them settled at now. It returns them and the callbacks inserted.
func (e *executor) settle(ctx context.Context, r runner, ids []string, now time.Time) ([]*driver.GroupRow, []driver.JobInsertResult, error) {
	list, _ := json.Marshal(ids) // strings always encode
	rows, err := r.query(ctx, e.d.gq.done, string(list))
	if err != nil {
		return nil, nil, err
	}
	var done []*driver.GroupRow
	var outcomes [][2]string
	for rows.Next() {
		var failed bool
		g, err := scanGroup(rows, &failed)
		if err != nil {
			rows.Close()
			return nil, nil, err
		}
		g.Outcome, g.SettledAt = groupkit.Outcome(failed), fromMicros(micros(now))
		done, outcomes = append(done, g), append(outcomes, [2]string{g.ID, string(g.Outcome)})
	}
	if err := cmpErr(rows.Err(), rows.Close()); err != nil || len(done) == 0 {
		return nil, nil, err
	}
	inserted, err := insertPlain(ctx, r, groupkit.Callbacks(done, now))
	if err != nil {
		return nil, nil, err
	}
	settled, _ := json.Marshal(outcomes)
	if _, err := r.exec(ctx, e.d.gq.settled, string(settled), micros(now)); err != nil {
		return nil, nil, err
	}
	return done, inserted, nil
}

// GroupGet reads a group with its counts in one query.
func (e *executor) GroupGet(ctx context.Context, p *driver.GroupGetParams) (*driver.GroupRow, error) {
	var g *driver.GroupRow
	err := e.read(ctx, "group get", func(r runner) error {
		rows, err := r.query(ctx, e.d.gq.get, p.ID)
		if err != nil {
			return err
		}
		defer rows.Close()
		if !rows.Next() {
			return cmpErr(rows.Err(), driver.ErrNotFound)
		}
		g, err = scanGroupCounts(rows)
		return err
	})
	return g, err
}

// GroupList reads a page of groups with their counts in one query.
func (e *executor) GroupList(ctx context.Context, p *driver.GroupListParams) ([]*driver.GroupRow, error) {
	if p == nil || p.Limit < 1 {
		return nil, errors.New("sqlitedriver: group list: nil params or a limit below 1")
	}
	out := []*driver.GroupRow{}
	if !driver.Matchable(string(p.Kind), p.Name, p.AfterID) {
		return out, nil
	}
	err := e.read(ctx, "group list", func(r runner) error {
		rows, err := r.query(ctx, e.d.gq.list, string(p.Kind), p.Name, nullMicros(p.CreatedFrom), nullMicros(p.CreatedBefore),
			p.Limit, nullString(p.AfterID))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			g, err := scanGroupCounts(rows)
			if err != nil {
				return err
			}
			out = append(out, g)
		}
		return rows.Err()
	})
	return out, err
}

// scanGroup reads one row of groupColumns, then more.
func scanGroup(row scanner, more ...any) (*driver.GroupRow, error) {
	var (
		g             driver.GroupRow
		kind, outcome string
		createdAt     int64
		callbacks     []byte
		settledAt     sql.NullInt64
	)
	if err := row.Scan(append([]any{&g.ID, &kind, &g.Name, &createdAt, &g.Open, &callbacks, &settledAt, &outcome}, more...)...); err != nil {
		return nil, err
	}
	g.Kind, g.Outcome = driver.GroupKind(kind), driver.GroupOutcome(outcome)
	g.CreatedAt, g.SettledAt = fromMicros(createdAt), fromNullMicros(settledAt)
	if err := groupkit.Decode(&g, callbacks, nil, false); err != nil {
		return nil, err
	}
	return &g, nil
}

// scanGroupCounts reads one row of groupColumns with its counts and
// times.
func scanGroupCounts(row scanner) (*driver.GroupRow, error) {
	var (
		counts            []byte
		started, finished sql.NullInt64
	)
	g, err := scanGroup(row, &counts, &started, &finished)
	if err != nil {
		return nil, err
	}
	g.StartedAt, g.FinishedAt = fromNullMicros(started), fromNullMicros(finished)
	if err := groupkit.Decode(g, nil, counts, true); err != nil {
		return nil, err
	}
	return g, nil
}

// GroupRetry retries a group in one transaction: its row unsettled, the
// requeue of its failed jobs (and cancelled ones without dependencies),
// and the jobs that depend on others waiting again.
func (e *executor) GroupRetry(ctx context.Context, p *driver.GroupRetryParams) ([]*driver.JobRow, error) {
	const op = "group retry"
	callbacks, err := groupkit.CallbacksJSON(p.Callbacks)
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: %s: %w", op, err)
	}
	var out []*driver.JobRow
	q := e.d.gq
	err = e.writeTx(ctx, op, []string{q.unsettle, q.retryIDs, q.rewait}, func(r runner) error {
		res, err := r.exec(ctx, q.unsettle, p.ID, nullJSON(callbacks))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return cmpErr(err, driver.ErrNotFound)
		}
		ids, err := queryStrings(ctx, r, q.retryIDs, p.ID)
		if err != nil {
			return err
		}
		out = nil
		if len(ids) > 0 {
			in := &executor{d: e.d, tx: r.tx}
			if out, err = in.JobRequeue(ctx, &driver.JobActParams{IDs: ids, Now: p.Now, Retries: p.Retries}); err != nil {
				return err
			}
		}
		rows, err := r.query(ctx, q.rewait, p.ID, p.Retries, micros(driver.WaitingRunAt))
		if err != nil {
			return err
		}
		more, err := scanRows(rows)
		out = append(out, more...)
		return err
	})
	return out, err
}

// GroupClean deletes settled groups with no job left in one statement.
func (e *executor) GroupClean(ctx context.Context, p *driver.GroupCleanParams) (int, error) {
	var n int64
	err := e.write(ctx, "group clean", func(r runner) error {
		res, err := r.exec(ctx, e.d.gq.clean, micros(p.Before), p.Limit)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

// queryStrings runs query through r and returns the one column of text of
// its rows.
func queryStrings(ctx context.Context, r runner, query string, args ...any) ([]string, error) {
	rows, err := r.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
