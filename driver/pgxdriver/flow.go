package pgxdriver

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/rowcodec"
)

// queuesTable is the qualified, quoted table of queue states.
func (d *Driver) queuesTable() string { return d.ident(d.table + "_queues") }

// groupsTable is the qualified, quoted table of groups.
func (d *Driver) groupsTable() string { return d.ident(d.table + "_groups") }

// limitsTable is the qualified, quoted table of limits.
func (d *Driver) limitsTable() string { return d.ident(d.table + "_limits") }

const (
	// queueColumns are the columns scanQueueState reads.
	queueColumns = `queue, paused, coalesce(max_running, 0), coalesce(rate_limit, 0), coalesce(rate_period, 0), updated_at`

	// queueSetSQL: $1 queue, $2 paused (NULL to keep), $3 max_running
	// (NULL to keep, 0 to remove), $4 rate_limit and $5 rate_period
	// (NULL to keep, a limit of 0 to remove), $6 now. A changed rate
	// limit starts a new window at the next claim.
	queueSetSQL = `INSERT INTO {q} AS s (queue, paused, max_running, rate_limit, rate_period, updated_at)
VALUES ($1, coalesce($2::boolean, false), nullif($3::int, 0), nullif($4::int, 0),
	CASE WHEN coalesce($4::int, 0) = 0 THEN NULL ELSE $5::bigint END, $6)
ON CONFLICT (queue) DO UPDATE SET
	paused = coalesce($2::boolean, s.paused),
	max_running = CASE WHEN $3::int IS NULL THEN s.max_running ELSE nullif($3::int, 0) END,
	rate_limit = CASE WHEN $4::int IS NULL THEN s.rate_limit ELSE nullif($4::int, 0) END,
	rate_period = CASE WHEN $4::int IS NULL THEN s.rate_period WHEN $4::int = 0 THEN NULL ELSE $5::bigint END,
	window_start = CASE WHEN $4::int IS NULL THEN s.window_start END,
	window_count = CASE WHEN $4::int IS NULL THEN s.window_count ELSE 0 END,
	updated_at = $6
RETURNING ` + queueColumns

	queueListSQL = `SELECT ` + queueColumns + ` FROM {q} ORDER BY queue`

	// claimLockSQL: $1 queue. It locks the queue's state row when the
	// queue has a limit, so that claimers of a limited queue take turns:
	// each counts, in a statement that starts after it holds the lock,
	// what the one before claimed. A queue without one locks nothing.
	claimLockSQL = `SELECT FROM {q} WHERE queue = $1 AND (max_running IS NOT NULL OR rate_limit IS NOT NULL) FOR UPDATE`

	// claimLockLazySQL is claimLockSQL and the settings of lazy in one
	// statement, which a claim on the pool sends before the claim itself.
	claimLockLazySQL = `WITH locked AS (` + claimLockSQL + ")\n" + lazy + `, (SELECT count(*) FROM locked)`

	// claimRoomSQL is the most jobs a claim of queue $4, at most $6, may
	// take at $3 under the queue's state: none while paused, what is
	// left of max_running, what is left of the rate window. The count
	// of processing jobs walks the lease index and runs only for a queue
	// with max_running.
	claimRoomSQL = `coalesce((SELECT CASE WHEN s.paused THEN 0 ELSE least($6,
		CASE WHEN s.max_running IS NULL THEN $6 ELSE greatest(0, s.max_running - (SELECT count(*) FROM {t} AS r
			WHERE r.locked_until IS NOT NULL AND r.status = 'processing' AND r.queue = $4)) END,
		CASE WHEN s.rate_limit IS NULL THEN $6
			WHEN s.window_start IS NULL OR s.window_start + s.rate_period * interval '1 microsecond' <= $3 THEN s.rate_limit
			ELSE greatest(0, s.rate_limit - s.window_count) END) END
	FROM {q} AS s WHERE s.queue = $4), $6)`

	// claimWindowSQL counts the jobs claimed (the rows of claimed) in the
	// rate window of queue $4, starting a new window at $3 when the last
	// one has ended.
	claimWindowSQL = `UPDATE {q} AS s SET
	window_start = CASE WHEN s.window_start IS NULL OR s.window_start + s.rate_period * interval '1 microsecond' <= $3
		THEN $3 ELSE s.window_start END,
	window_count = CASE WHEN s.window_start IS NULL OR s.window_start + s.rate_period * interval '1 microsecond' <= $3
		THEN 0 ELSE s.window_count END + (SELECT count(*) FROM claimed)
WHERE s.queue = $4 AND s.rate_limit IS NOT NULL AND EXISTS (SELECT FROM claimed)`

	// waitSQL stores the jobs $1 waiting: $2 their dependencies (JSON
	// arrays), $3 their policies.
	waitSQL = `UPDATE {t} AS j SET depends_on = u.deps::jsonb, wait_policy = u.policy, wait_run_at = j.run_at, run_at = $4
FROM unnest($1::uuid[], $2::text[], $3::text[]) AS u(id, deps, policy)
WHERE j.id = u.id AND j.wait_policy IS NULL AND j.status = 'pending'`

	// waitingSQL reads up to $1 waiting jobs with IDs after $2, without
	// locking them (the statements that settle a job check again that it
	// waits), with what their dependencies are: for each, the number of dependencies completed,
	// and the first (by ID) that is failed, cancelled or gone, with its
	// status (NULL when gone).
	waitingSQL = `SELECT w.id, w.wait_policy, count(*),
	count(*) FILTER (WHERE d.status = 'completed'),
	count(*) FILTER (WHERE d.status IN ('failed', 'cancelled') OR d.id IS NULL),
	min(dep.id) FILTER (WHERE d.status IN ('failed', 'cancelled') OR d.id IS NULL)
FROM (SELECT id, wait_policy, depends_on FROM {t}
	WHERE wait_policy IS NOT NULL AND status = 'pending' AND id > $2 ORDER BY id LIMIT $1) AS w
CROSS JOIN LATERAL jsonb_array_elements_text(w.depends_on) AS dep(id)
LEFT JOIN {t} AS d ON d.id = dep.id::uuid
GROUP BY w.id, w.wait_policy`

	// waitingGroupsSQL is waitingSQL for the waiting jobs of the groups
	// $3 alone. They are read through the groups' index into a
	// materialized set first, so that no plan walks every waiting job in
	// ID order looking for the few of these groups.
	waitingGroupsSQL = `WITH g AS MATERIALIZED (SELECT id, wait_policy, depends_on FROM {t}
	WHERE group_id = ANY($3::uuid[]) AND status = 'pending' AND wait_policy IS NOT NULL AND id > $2)
SELECT w.id, w.wait_policy, count(*),
	count(*) FILTER (WHERE d.status = 'completed'),
	count(*) FILTER (WHERE d.status IN ('failed', 'cancelled') OR d.id IS NULL),
	min(dep.id) FILTER (WHERE d.status IN ('failed', 'cancelled') OR d.id IS NULL)
FROM (SELECT * FROM g ORDER BY id LIMIT $1) AS w
CROSS JOIN LATERAL jsonb_array_elements_text(w.depends_on) AS dep(id)
LEFT JOIN {t} AS d ON d.id = dep.id::uuid
GROUP BY w.id, w.wait_policy`

	// depStatusSQL: the status of the job $1, read under a share lock so
	// that it cannot change before the transaction ends; 'held' when
	// another transaction is changing it (requeueing it, say), NULL when
	// there is no such job.
	depStatusSQL = `SELECT CASE WHEN EXISTS (SELECT FROM {t} WHERE id = $1)
	THEN coalesce((SELECT status FROM {t} WHERE id = $1 FOR SHARE SKIP LOCKED), 'held') END`

	// anyWaitingSQL: whether a job waits, read through the waiting index.
	anyWaitingSQL = `SELECT EXISTS (SELECT FROM {t} WHERE wait_policy IS NOT NULL)`

	// releaseSQL releases the waiting jobs $1 that still wait, passing over
	// those another transaction holds (waitingLockedSQL).
	releaseSQL = `UPDATE {t} AS j SET run_at = j.wait_run_at, wait_policy = NULL, wait_run_at = NULL
WHERE j.id IN (` + waitingLockedSQL + `) AND j.wait_policy IS NOT NULL AND j.status = 'pending'
RETURNING {cols}`

	// releaseCancelSQL cancels the waiting jobs $1 that still wait at $2,
	// each with its error in $3 (JSON), passing over those another
	// transaction holds (waitingLockedSQL).
	releaseCancelSQL = `UPDATE {t} AS j SET status = 'cancelled', finalized_at = $2, run_at = j.wait_run_at,
	wait_policy = NULL, wait_run_at = NULL, errors = {finalizeErrors}
FROM unnest($1::uuid[], $3::text[]) AS i(id, error)
WHERE j.id = i.id AND j.id IN (` + waitingLockedSQL + `) AND j.wait_policy IS NOT NULL AND j.status = 'pending'
RETURNING {cols}`

	// waitingLockedSQL locks the jobs $1 that still wait, but for those
	// another transaction holds: a caller's that settled them itself and
	// has not committed (WorkNextTx), or another client's pass. Those are
	// settled by it, or at a later pass; waiting for it would hold up this
	// pass, and the flow states read in the same tick, for as long as the
	// caller's transaction lasts.
	waitingLockedSQL = `SELECT id FROM {t} WHERE id = ANY($1::uuid[]) AND wait_policy IS NOT NULL AND status = 'pending'
	FOR UPDATE SKIP LOCKED`
)

// storeWaits stores the waiting jobs among jobs (waits, their indexes,
// each with a unique key) as waiting, in db, once they were inserted: one
// found a duplicate (results) was not, and the live job is left as it is.
// (Jobs without a unique key are stored waiting by their insert.)
func (e *executor) storeWaits(ctx context.Context, db dbtx, jobs []*driver.JobInsert, waits []int,
	results []driver.JobInsertResult) error {
	var ids []pgtype.UUID
	var deps, policies []string
	for _, i := range waits {
		if results[i].Duplicate {
			continue
		}
		j := jobs[i]
		id, _ := parseUUID(j.ID) // checked by JobInsertMany, as the dependencies
		ids = append(ids, id)
		deps, policies = append(deps, string(rowcodec.StringsJSON(j.DependsOn))), append(policies, string(j.OnDependencyFailure))
	}
	if len(ids) == 0 {
		return nil
	}
	_, err := db.Exec(ctx, e.d.q.wait, ids, deps, policies, driver.WaitingRunAt)
	return err
}

// QueueStateSet changes a queue's state with one upsert.
func (e *executor) QueueStateSet(ctx context.Context, p *driver.QueueStateSetParams) (*driver.QueueState, error) {
	const op = "queue state set"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("pgxdriver: queue state set: nil params")
	}
	if err := driver.CheckKey("queue", p.Queue); err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	var limit, period *int64
	if p.Rate != nil {
		l, per := int64(p.Rate.Limit), p.Rate.Period.Microseconds()
		limit, period = &l, &per
	}
	var maxRunning *int64
	if p.MaxRunning != nil {
		m := int64(*p.MaxRunning)
		maxRunning = &m
	}
	s, err := scanQueueState(e.db.QueryRow(ctx, e.d.q.queueSet, p.Queue, p.Paused, maxRunning, limit, period, p.Now))
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	return s, nil
}

// QueueStateList reads every queue state.
func (e *executor) QueueStateList(ctx context.Context, p *driver.QueueStateListParams) ([]*driver.QueueState, error) {
	const op = "queue state list"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	rows, err := e.db.Query(ctx, e.d.q.queueList)
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	states := []*driver.QueueState{}
	for rows.Next() {
		s, err := scanQueueState(rows)
		if err != nil {
			rows.Close()
			return nil, wrapErr(ctx, op, err)
		}
		states = append(states, s)
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	return states, nil
}

func scanQueueState(row pgx.Row) (*driver.QueueState, error) {
	var (
		s      driver.QueueState
		period int64
	)
	if err := row.Scan(&s.Queue, &s.Paused, &s.MaxRunning, &s.RateLimit, &period, &s.UpdatedAt); err != nil {
		return nil, err
	}
	s.RatePeriod = time.Duration(period) * time.Microsecond
	s.UpdatedAt = s.UpdatedAt.UTC()
	return &s, nil
}

// JobRelease settles the waiting jobs, p.Limit at a time in the order of
// their IDs: it reads them with what their dependencies are, then, in a
// transaction, releases or cancels those whose dependencies allow it (see
// releasePage).
func (e *executor) JobRelease(ctx context.Context, p *driver.JobReleaseParams) ([]*driver.JobRow, error) {
	const op = "release"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil || p.Limit < 1 {
		return nil, errors.New("pgxdriver: release: nil params or a limit below 1")
	}
	// Most databases have no waiting job: one read answers, where a
	// release is a transaction of three round trips.
	var waiting bool
	if err := e.db.QueryRow(ctx, e.d.q.anyWaiting).Scan(&waiting); err != nil || !waiting {
		return nil, wrapErr(ctx, op, err)
	}
	var groups []pgtype.UUID
	if len(p.Groups) > 0 {
		groups = uuids(p.Groups)
	}
	if len(p.Groups) > 0 && len(groups) == 0 {
		return nil, nil // no such group
	}
	var out []*driver.JobRow
	// Page through the waiting jobs by ID.
	after := pgtype.UUID{Valid: true}
	for {
		page, last, seen, err := e.releasePage(ctx, p, groups, after)
		if err != nil {
			return nil, wrapErr(ctx, op, err)
		}
		out = append(out, page...)
		if seen < p.Limit {
			return out, nil
		}
		after = last
	}
}

// releasePage settles up to p.Limit waiting jobs with IDs after after,
// of the groups groups when there are any,
// and returns the jobs it changed, the last ID it looked at, and how many
// jobs it looked at. It reads them without locking them, and opens a
// transaction only when some can be settled: the statements that settle
// a job lock it, passing over one another transaction holds, and check
// again that it waits, so one that another client settled or a user
// cancelled meanwhile is left as it is; a dependency's status is read
// again before its dependent is cancelled. (Locking every waiting job at
// every pass wrote each of their rows, each pass.)
func (e *executor) releasePage(ctx context.Context, p *driver.JobReleaseParams, groups []pgtype.UUID, after pgtype.UUID) (
	out []*driver.JobRow, last pgtype.UUID, seen int, err error) {
	release, bad, last, seen, err := e.readWaiting(ctx, p.Limit, groups, after)
	if err != nil || len(release)+len(bad) == 0 {
		return nil, last, seen, err
	}
	err = e.atomic(ctx, func(db dbtx) error {
		out = nil
		rel := slices.Clip(release)
		var cancel []pgtype.UUID
		var errs []string
		for _, b := range bad {
			var status pgtype.Text
			if u, ok := parseUUID(b.dep); ok {
				if err := db.QueryRow(ctx, e.d.q.depStatus, u).Scan(&status); err != nil {
					return err
				}
			}
			if !rowcodec.DependencyFailed(driver.JobStatus(status.String)) {
				continue // requeued since it was read, or being changed: the job waits on
			}
			if b.release {
				rel = append(rel, b.id)
				continue
			}
			msg, err := errorJSON(&driver.AttemptError{At: p.Now, Error: driver.DependencyError(b.dep, driver.JobStatus(status.String))})
			if err != nil {
				return err
			}
			cancel, errs = append(cancel, b.id), append(errs, string(msg))
		}
		var err error
		if len(rel) > 0 {
			if out, err = appendQueried(ctx, db, out, e.d.q.release, rel); err != nil {
				return err
			}
			// A released job is as new to the claims as an inserted one:
			// every listening client hears of its queue once this commits.
			var queues []string
			for _, row := range out {
				if !slices.Contains(queues, row.Queue) {
					queues = append(queues, row.Queue)
				}
			}
			if len(queues) > 0 {
				if _, err := db.Exec(ctx, e.d.q.notify, e.d.q.channel, queues); err != nil {
					return err
				}
			}
		}
		if len(cancel) > 0 {
			out, err = appendQueried(ctx, db, out, e.d.q.releaseCancel, cancel, p.Now, errs)
		}
		return err
	})
	return out, last, seen, err
}

// readWaiting reads up to limit waiting jobs with IDs after after, and
// returns those to release, those to settle because of a failed dependency
// (each with the first such), the last ID read and how many jobs it read.
func (e *executor) readWaiting(ctx context.Context, limit int, groups []pgtype.UUID, after pgtype.UUID) (
	release []pgtype.UUID, bad []pendingBad, last pgtype.UUID, seen int, err error) {
	last = after
	query, args := e.d.q.waiting, []any{limit, after}
	if len(groups) > 0 {
		query, args = e.d.q.waitingGroups, append(args, groups)
	}
	rows, err := e.db.Query(ctx, query, args...)
	if err != nil {
		return nil, nil, last, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id              pgtype.UUID
			policy          string
			n, done, failed int
			firstBad        pgtype.Text
		)
		if err := rows.Scan(&id, &policy, &n, &done, &failed, &firstBad); err != nil {
			return nil, nil, last, 0, err
		}
		seen++
		if bytes.Compare(id.Bytes[:], last.Bytes[:]) > 0 {
			last = id
		}
		switch rel, can := rowcodec.Settle(driver.DependencyPolicy(policy), n, done, failed); {
		case rel && failed == 0:
			release = append(release, id)
		case rel, can: // on a failed dependency, read again before settling
			bad = append(bad, pendingBad{id: id, dep: firstBad.String, release: rel})
		}
	}
	return release, bad, last, seen, rows.Err()
}

// appendQueried appends the jobs query returns to jobs.
func appendQueried(ctx context.Context, db dbtx, jobs []*driver.JobRow, query string, args ...any) ([]*driver.JobRow, error) {
	rows, err := db.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	more, err := scanRows(rows)
	return append(jobs, more...), err
}

// pendingBad is a waiting job to settle because of a failed dependency,
// dep: to release (release, its policy DependencyRun) or to cancel.
type pendingBad struct {
	id      pgtype.UUID
	dep     string
	release bool
}
