package pgxdriver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/groupkit"
	"github.com/sluicehq/sluice/driver/internal/rowcodec"
)

// The statements of groups. {t} is the jobs table, {g} the table of
// groups (see migration 0013).
const (
	groupColumns = `g.id, g.kind, g.name, g.created_at, g.open, g.callbacks, g.settled_at, coalesce(g.outcome, '')`

	// groupInsertSQL stores a group: $1 id, $2 kind, $3 name, $4
	// created_at, $5 open, $6 callbacks (JSON text or NULL).
	groupInsertSQL = `INSERT INTO {g} (id, kind, name, created_at, open, callbacks) VALUES ($1, $2, $3, $4, $5, $6::text::jsonb)`

	// groupOpenSQL reads whether group $1 is open, locking it against a
	// close until the transaction ends.
	groupOpenSQL = `SELECT open FROM {g} WHERE id = $1 FOR SHARE`

	// groupCloseSQL closes group $1.
	groupCloseSQL = `UPDATE {g} SET open = false WHERE id = $1`

	// groupLockSQL locks the closed, unsettled groups among $1, in ID
	// order, and reads them.
	groupLockSQL = `SELECT ` + groupColumns + ` FROM {g} AS g WHERE g.id = ANY($1::uuid[]) AND g.settled_at IS NULL AND NOT g.open
ORDER BY g.id FOR UPDATE`

	// groupDoneSQL reads, of the groups $1, those with no job pending or
	// processing, each with whether one of its jobs failed or was
	// cancelled: two probes of group_idx per group, however many jobs it
	// has. settle runs it before groupLockSQL, to lock only groups that
	// may be done, and after, to see what the writers that held the locks
	// before committed.
	groupDoneSQL = `SELECT g.id, EXISTS (SELECT FROM {t} WHERE group_id = g.id AND status IN ('failed', 'cancelled'))
FROM unnest($1::uuid[]) AS g(id)
WHERE NOT EXISTS (SELECT FROM {t} WHERE group_id = g.id AND status IN ('pending', 'processing'))`

	// groupSettledSQL marks groups $1 settled at $2 with outcomes $3.
	groupSettledSQL = `UPDATE {g} AS g SET settled_at = $2, outcome = u.outcome
FROM unnest($1::uuid[], $3::text[]) AS u(id, outcome) WHERE g.id = u.id`

	// groupRetryIDsSQL reads the jobs of group $1 a retry requeues.
	groupRetryIDsSQL = `SELECT id::text FROM {t}
WHERE group_id = $1 AND (status = 'failed' OR (status = 'cancelled' AND depends_on IS NULL))`

	// groupRewaitSQL makes the cancelled jobs of group $1 that depend on
	// others wait for them again, with $2 more retries; $3 is
	// driver.WaitingRunAt.
	groupRewaitSQL = `UPDATE {t} AS j SET status = 'pending', finalized_at = NULL, wait_policy = 'cancel',
	wait_run_at = j.run_at, run_at = $3, max_retries = j.attempt + $2
WHERE j.group_id = $1 AND j.status = 'cancelled' AND j.depends_on IS NOT NULL
RETURNING {cols}`

	// groupUnsettleSQL unsettles group $1, replacing its callbacks by $2
	// unless NULL.
	groupUnsettleSQL = `UPDATE {g} SET settled_at = NULL, outcome = NULL, callbacks = coalesce($2::text::jsonb, callbacks) WHERE id = $1`

	// groupCleanSQL deletes up to $2 groups settled before $1 that have no
	// job left.
	groupCleanSQL = `DELETE FROM {g} WHERE id IN (SELECT g.id FROM {g} AS g
	WHERE g.settled_at < $1 AND NOT EXISTS (SELECT FROM {t} WHERE group_id = g.id) LIMIT $2)`

	// groupUnsettledSQL reads up to $1 closed, unsettled groups.
	groupUnsettledSQL = `SELECT id FROM {g} WHERE settled_at IS NULL AND NOT open ORDER BY id LIMIT $1`

	// groupUnsettledAmongSQL reads up to $1 closed, unsettled groups
	// among $2.
	groupUnsettledAmongSQL = `SELECT id FROM {g} WHERE id = ANY($2::uuid[]) AND settled_at IS NULL AND NOT open
ORDER BY id LIMIT $1`

	// groupGetSQL reads group $1 with its counts and times.
	groupGetSQL = `SELECT ` + groupColumns + `, c.counts, c.started, c.finished FROM {g} AS g
CROSS JOIN LATERAL (SELECT jsonb_object_agg(s.status, s.n) AS counts, min(s.started) AS started,
	CASE WHEN bool_or(s.status IN ('pending', 'processing')) THEN NULL ELSE max(s.finished) END AS finished
	FROM (SELECT status, count(*) AS n, min(attempted_at) AS started, max(finalized_at) AS finished
		FROM {t} WHERE group_id = g.id GROUP BY status) AS s) AS c
WHERE g.id = $1`

	// groupListSQL reads up to $5 groups newest first, of kind $1 and
	// name $2 (empty for any), created in [$3, $4) (NULL for open ends),
	// before the group $6 (NULL to start), with their counts.
	groupListSQL = `SELECT ` + groupColumns + `, c.counts, c.started, c.finished FROM (
	SELECT * FROM {g} WHERE ($1 = '' OR kind = $1) AND ($2 = '' OR name = $2)
		AND ($3::timestamptz IS NULL OR created_at >= $3) AND ($4::timestamptz IS NULL OR created_at < $4)
		AND ($6::uuid IS NULL OR (created_at, id) < (SELECT created_at, id FROM {g} WHERE id = $6))
	ORDER BY created_at DESC, id DESC LIMIT $5) AS g
CROSS JOIN LATERAL (SELECT jsonb_object_agg(s.status, s.n) AS counts, min(s.started) AS started,
	CASE WHEN bool_or(s.status IN ('pending', 'processing')) THEN NULL ELSE max(s.finished) END AS finished
	FROM (SELECT status, count(*) AS n, min(attempted_at) AS started, max(finalized_at) AS finished
		FROM {t} WHERE group_id = g.id GROUP BY status) AS s) AS c
ORDER BY g.created_at DESC, g.id DESC`
)

// groupQueries holds the statements of groups, filled in.
type groupQueries struct {
	insert, open, close, lock, done, settled, unsettled, unsettledAmong, get, list string
	retryIDs, rewait, unsettle, clean                                              string
}

func newGroupQueries(r interface{ Replace(string) string }) groupQueries {
	return groupQueries{insert: r.Replace(groupInsertSQL), open: r.Replace(groupOpenSQL), close: r.Replace(groupCloseSQL),
		lock: r.Replace(groupLockSQL), done: r.Replace(groupDoneSQL), settled: r.Replace(groupSettledSQL),
		unsettled: r.Replace(groupUnsettledSQL), unsettledAmong: r.Replace(groupUnsettledAmongSQL), get: r.Replace(groupGetSQL), list: r.Replace(groupListSQL),
		retryIDs: r.Replace(groupRetryIDsSQL), rewait: r.Replace(groupRewaitSQL), unsettle: r.Replace(groupUnsettleSQL),
		clean: r.Replace(groupCleanSQL)}
}

// GroupInsert stores a group and inserts its jobs in one transaction: the
// group's row, then the jobs in one statement over arrays (or a COPY from
// CopyThreshold jobs on), then the queues' notification.
func (e *executor) GroupInsert(ctx context.Context, p *driver.GroupInsertParams) (*driver.GroupInsertResult, error) {
	const op = "group insert"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	g, jobs, err := groupkit.Prepare(p)
	if err != nil {
		return nil, fmt.Errorf("pgxdriver: %s: %w", op, err)
	}
	id, ok := parseUUID(g.ID)
	if !ok {
		return nil, fmt.Errorf("pgxdriver: %s: ID %q is not a UUID", op, g.ID)
	}
	callbacks, err := groupkit.CallbacksJSON(g.Callbacks)
	if err != nil {
		return nil, fmt.Errorf("pgxdriver: %s: %w", op, err)
	}
	var queues []string
	err = e.atomic(ctx, func(db dbtx) error {
		if _, err := db.Exec(ctx, e.d.q.groups.insert, id, string(g.Kind), g.Name, g.CreatedAt, g.Open, nullText(callbacks)); err != nil {
			return err
		}
		queues, err = e.insertGroupJobs(ctx, db, jobs)
		return err
	})
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	e.notifyAfter(queues)
	rows := make([]*driver.JobRow, len(jobs))
	for i, j := range jobs {
		rows[i] = rowcodec.NewRow(j)
	}
	return &driver.GroupInsertResult{Group: g, Jobs: rows}, nil
}

// insertGroupJobs inserts jobs, none unique, through db: with one
// statement over arrays, or a COPY from CopyThreshold jobs on. It returns
// their queues, for a notification once committed.
func (e *executor) insertGroupJobs(ctx context.Context, db dbtx, jobs []*driver.JobInsert) ([]string, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	for i, j := range jobs {
		if j.Priority != int(int32(j.Priority)) || j.MaxRetries != int(int32(j.MaxRetries)) {
			return nil, fmt.Errorf("job %d: priority %d or max retries %d out of the 32-bit range", i, j.Priority, j.MaxRetries)
		}
		if _, ok := parseUUID(j.ID); !ok {
			return nil, fmt.Errorf("job %d: ID %q is not a UUID", i, j.ID)
		}
		for _, dep := range j.DependsOn {
			if _, ok := parseUUID(dep); !ok {
				return nil, fmt.Errorf("job %d: dependency %q is not a UUID", i, dep)
			}
		}
	}
	if len(jobs) >= CopyThreshold {
		if _, err := db.CopyFrom(ctx, e.d.tableIdent(), copyColumnsFor(jobs), copySource(jobs)); err != nil {
			return nil, err
		}
	} else {
		query, args := insertRowsStmt(e.d.q, jobs)
		if _, err := db.Exec(ctx, query, args...); err != nil {
			return nil, err
		}
	}
	return groupkit.Queues(jobs), nil
}

// GroupAdd inserts jobs into an open group: it reads the group under a
// share lock, so that no close passes it, then inserts.
func (e *executor) GroupAdd(ctx context.Context, p *driver.GroupAddParams) ([]*driver.JobRow, error) {
	const op = "group add"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	jobs, err := groupkit.PrepareAdd(p)
	if err != nil {
		return nil, fmt.Errorf("pgxdriver: %s: %w", op, err)
	}
	id, ok := parseUUID(p.ID)
	if !ok {
		return nil, wrapErr(ctx, op, driver.ErrNotFound)
	}
	var queues []string
	err = e.atomic(ctx, func(db dbtx) error {
		var open bool
		switch err := db.QueryRow(ctx, e.d.q.groups.open, id).Scan(&open); {
		case errors.Is(err, pgx.ErrNoRows):
			return driver.ErrNotFound
		case err != nil:
			return err
		case !open:
			return driver.ErrGroupClosed
		}
		queues, err = e.insertGroupJobs(ctx, db, jobs)
		return err
	})
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	e.notifyAfter(queues)
	rows := make([]*driver.JobRow, len(jobs))
	for i, j := range jobs {
		rows[i] = rowcodec.NewRow(j)
	}
	return rows, nil
}

// GroupClose closes a group and settles it at once if none of its jobs is
// live, in one transaction.
func (e *executor) GroupClose(ctx context.Context, p *driver.GroupCloseParams) (*driver.GroupRow, error) {
	const op = "group close"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	id, ok := parseUUID(p.ID)
	if !ok {
		return nil, wrapErr(ctx, op, driver.ErrNotFound)
	}
	var queues []string
	err := e.atomic(ctx, func(db dbtx) error {
		tag, err := db.Exec(ctx, e.d.q.groups.close, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return driver.ErrNotFound
		}
		_, queues, err = e.settle(ctx, db, []pgtype.UUID{id}, p.Now)
		return err
	})
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	e.notifyAfter(queues)
	return e.GroupGet(ctx, &driver.GroupGetParams{ID: p.ID})
}

// GroupSettle settles the closed groups that are done, p.Limit at a time
// in one transaction each.
func (e *executor) GroupSettle(ctx context.Context, p *driver.GroupSettleParams) ([]*driver.GroupRow, error) {
	const op = "group settle"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil || p.Limit < 1 {
		return nil, errors.New("pgxdriver: group settle: nil params or a limit below 1")
	}
	query, args := e.d.q.groups.unsettled, []any{p.Limit}
	if len(p.IDs) > 0 {
		among := uuids(p.IDs)
		if len(among) == 0 {
			return nil, nil // no such group
		}
		query, args = e.d.q.groups.unsettledAmong, append(args, among)
	}
	rows, err := e.db.Query(ctx, query, args...)
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[pgtype.UUID])
	if err != nil || len(ids) == 0 {
		return nil, wrapErr(ctx, op, err)
	}
	var settled []*driver.GroupRow
	var queues []string
	err = e.atomic(ctx, func(db dbtx) (err error) {
		settled, queues, err = e.settle(ctx, db, ids, p.Now)
		return err
	})
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	e.notifyAfter(queues)
	return settled, nil
}

// settle settles, in db's transaction, those of the groups ids that are
// closed, unsettled and done: it locks those that have no live job, reads
// again which have none (after the locks, so that of two settlers of one
// group the second sees what the first committed, and settles nothing),
// inserts their callbacks and marks them settled at now. It returns them
// and the queues of the callbacks inserted.
func (e *executor) settle(ctx context.Context, db dbtx, ids []pgtype.UUID, now time.Time) ([]*driver.GroupRow, []string, error) {
	q := &e.d.q.groups
	// Only a group with no live job left may be done: a group that still
	// has one is not locked, so that the outcomes of its jobs do not take
	// turns on its row. Two last outcomes committing at once may each see
	// the other's job live; the group is then settled by the next pass
	// (GroupSettle).
	maybe, err := doneIDs(ctx, db, q.done, ids)
	if err != nil || len(maybe) == 0 {
		return nil, nil, err
	}
	rows, err := db.Query(ctx, q.lock, maybe)
	if err != nil {
		return nil, nil, err
	}
	locked := make(map[[16]byte]*driver.GroupRow)
	var lockedIDs []pgtype.UUID
	for rows.Next() {
		g, err := scanGroup(rows)
		if err != nil {
			rows.Close()
			return nil, nil, err
		}
		u, _ := parseUUID(g.ID)
		locked[u.Bytes] = g
		lockedIDs = append(lockedIDs, u)
	}
	if err := rows.Err(); err != nil || len(lockedIDs) == 0 {
		return nil, nil, err
	}
	rows, err = db.Query(ctx, q.done, lockedIDs)
	if err != nil {
		return nil, nil, err
	}
	var done []*driver.GroupRow
	var doneIDs []pgtype.UUID
	var outcomes []string
	for rows.Next() {
		var id pgtype.UUID
		var failed bool
		if err := rows.Scan(&id, &failed); err != nil {
			rows.Close()
			return nil, nil, err
		}
		g := locked[id.Bytes]
		g.Outcome, g.SettledAt = groupkit.Outcome(failed), now.UTC()
		done, doneIDs, outcomes = append(done, g), append(doneIDs, id), append(outcomes, string(g.Outcome))
	}
	if err := rows.Err(); err != nil || len(done) == 0 {
		return nil, nil, err
	}
	callbacks := groupkit.Callbacks(done, now)
	if len(callbacks) > 0 {
		query, args := insertRowsStmt(e.d.q, callbacks)
		if _, err := db.Exec(ctx, query, args...); err != nil {
			return nil, nil, err
		}
	}
	if _, err := db.Exec(ctx, q.settled, doneIDs, now, outcomes); err != nil {
		return nil, nil, err
	}
	return done, groupkit.Queues(callbacks), nil
}

// doneIDs returns, of the groups ids, those done reports done.
func doneIDs(ctx context.Context, db dbtx, done string, ids []pgtype.UUID) ([]pgtype.UUID, error) {
	rows, err := db.Query(ctx, done, ids)
	if err != nil {
		return nil, err
	}
	var out []pgtype.UUID
	for rows.Next() {
		var id pgtype.UUID
		var failed bool
		if err := rows.Scan(&id, &failed); err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// GroupGet reads a group with its counts in one query.
func (e *executor) GroupGet(ctx context.Context, p *driver.GroupGetParams) (*driver.GroupRow, error) {
	const op = "group get"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	id, ok := parseUUID(p.ID)
	if !ok {
		return nil, wrapErr(ctx, op, driver.ErrNotFound)
	}
	g, err := scanGroupCounts(e.db.QueryRow(ctx, e.d.q.groups.get, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, wrapErr(ctx, op, driver.ErrNotFound)
	}
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	return g, nil
}

// GroupList reads a page of groups with their counts in one query.
func (e *executor) GroupList(ctx context.Context, p *driver.GroupListParams) ([]*driver.GroupRow, error) {
	const op = "group list"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil || p.Limit < 1 {
		return nil, errors.New("pgxdriver: group list: nil params or a limit below 1")
	}
	out := []*driver.GroupRow{}
	if !driver.Matchable(string(p.Kind), p.Name) {
		return out, nil
	}
	var after pgtype.UUID
	if p.AfterID != "" {
		var ok bool
		if after, ok = parseUUID(p.AfterID); !ok {
			return out, nil
		}
	}
	rows, err := e.db.Query(ctx, e.d.q.groups.list, string(p.Kind), p.Name, nullTime(p.CreatedFrom), nullTime(p.CreatedBefore),
		p.Limit, after)
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	defer rows.Close()
	for rows.Next() {
		g, err := scanGroupCounts(rows)
		if err != nil {
			return nil, wrapErr(ctx, op, err)
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	return out, nil
}

// scanGroup reads one row of groupColumns.
func scanGroup(row pgx.Row, more ...any) (*driver.GroupRow, error) {
	var (
		g         driver.GroupRow
		id        pgtype.UUID
		kind      string
		callbacks []byte
		settledAt pgtype.Timestamptz
		outcome   string
	)
	if err := row.Scan(append([]any{&id, &kind, &g.Name, &g.CreatedAt, &g.Open, &callbacks, &settledAt, &outcome}, more...)...); err != nil {
		return nil, err
	}
	g.ID, g.Kind, g.Outcome = uuidString(id), driver.GroupKind(kind), driver.GroupOutcome(outcome)
	g.CreatedAt, g.SettledAt = g.CreatedAt.UTC(), fromNullTime(settledAt)
	if err := groupkit.Decode(&g, callbacks, nil, false); err != nil {
		return nil, err
	}
	return &g, nil
}

// scanGroupCounts reads one row of groupColumns with its counts and
// times.
func scanGroupCounts(row pgx.Row) (*driver.GroupRow, error) {
	var (
		counts            []byte
		started, finished pgtype.Timestamptz
	)
	g, err := scanGroup(row, &counts, &started, &finished)
	if err != nil {
		return nil, err
	}
	g.StartedAt, g.FinishedAt = fromNullTime(started), fromNullTime(finished)
	if err := groupkit.Decode(g, nil, counts, true); err != nil {
		return nil, err
	}
	return g, nil
}

// GroupRetry retries a group in one transaction: the requeue of its
// failed jobs (and cancelled ones without dependencies), the jobs that
// depend on others waiting again, and its row unsettled.
func (e *executor) GroupRetry(ctx context.Context, p *driver.GroupRetryParams) ([]*driver.JobRow, error) {
	const op = "group retry"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	id, ok := parseUUID(p.ID)
	if !ok {
		return nil, wrapErr(ctx, op, driver.ErrNotFound)
	}
	callbacks, err := groupkit.CallbacksJSON(p.Callbacks)
	if err != nil {
		return nil, fmt.Errorf("pgxdriver: %s: %w", op, err)
	}
	var out []*driver.JobRow
	err = e.atomic(ctx, func(db dbtx) error {
		tag, err := db.Exec(ctx, e.d.q.groups.unsettle, id, nullText(callbacks))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return driver.ErrNotFound
		}
		rows, err := db.Query(ctx, e.d.q.groups.retryIDs, id)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		in := &executor{d: e.d, db: db, inTx: true}
		if len(ids) > 0 {
			if out, err = in.JobRequeue(ctx, &driver.JobActParams{IDs: ids, Now: p.Now, Retries: p.Retries}); err != nil {
				return err
			}
		}
		out, err = appendQueried(ctx, db, out, e.d.q.groups.rewait, id, p.Retries, driver.WaitingRunAt)
		return err
	})
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	return out, nil
}

// GroupClean deletes settled groups with no job left in one statement.
func (e *executor) GroupClean(ctx context.Context, p *driver.GroupCleanParams) (int, error) {
	const op = "group clean"
	if err := e.start(ctx, op); err != nil {
		return 0, err
	}
	tag, err := e.db.Exec(ctx, e.d.q.groups.clean, p.Before, p.Limit)
	if err != nil {
		return 0, wrapErr(ctx, op, err)
	}
	return int(tag.RowsAffected()), nil
}
