package sqlitedriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/rowcodec"
)

// The statements of flow control; {t} is the quoted jobs table, {q} the
// quoted table of queue states.
const (
	queueColumns = `queue, paused, coalesce(max_running, 0), coalesce(rate_limit, 0), coalesce(rate_period, 0), updated_at`

	// queueSetSQL: ?1 queue, ?2 paused (NULL to keep), ?3 max_running
	// (NULL to keep, 0 to remove), ?4 rate_limit and ?5 rate_period (NULL
	// to keep, a limit of 0 to remove), ?6 now. A changed rate limit
	// starts a new window at the next claim.
	queueSetSQL = `INSERT INTO {q} (queue, paused, max_running, rate_limit, rate_period, updated_at)
VALUES (?1, coalesce(?2, 0), nullif(?3, 0), nullif(?4, 0), CASE WHEN coalesce(?4, 0) = 0 THEN NULL ELSE ?5 END, ?6)
ON CONFLICT (queue) DO UPDATE SET
	paused = coalesce(?2, paused),
	max_running = CASE WHEN ?3 IS NULL THEN max_running ELSE nullif(?3, 0) END,
	rate_limit = CASE WHEN ?4 IS NULL THEN rate_limit ELSE nullif(?4, 0) END,
	rate_period = CASE WHEN ?4 IS NULL THEN rate_period WHEN ?4 = 0 THEN NULL ELSE ?5 END,
	window_start = CASE WHEN ?4 IS NULL THEN window_start END,
	window_count = CASE WHEN ?4 IS NULL THEN window_count ELSE 0 END,
	updated_at = ?6
RETURNING ` + queueColumns

	queueListSQL = `SELECT ` + queueColumns + ` FROM {q} ORDER BY queue`

	// claimRoomSQL: ?1 queue, ?2 now. The queue's state as a claim needs
	// it: paused, what is left of max_running (-1 for no limit; the count
	// of processing jobs walks the lease index and runs only for a queue
	// with max_running), and what is left of the rate window (-1 for no
	// limit).
	claimRoomSQL = `SELECT paused,
	CASE WHEN max_running IS NULL THEN -1 ELSE max(0, max_running -
		(SELECT count(*) FROM {t} WHERE locked_until IS NOT NULL AND status = 'processing' AND queue = ?1)) END,
	CASE WHEN rate_limit IS NULL THEN -1
		WHEN window_start IS NULL OR window_start + rate_period <= ?2 THEN rate_limit
		ELSE max(0, rate_limit - window_count) END
FROM {q} WHERE queue = ?1`

	// claimWindowSQL: ?1 queue, ?2 now, ?3 jobs claimed: counts them in
	// the queue's rate window, starting a new one when the last has ended.
	claimWindowSQL = `UPDATE {q} SET
	window_count = CASE WHEN window_start IS NULL OR window_start + rate_period <= ?2 THEN 0 ELSE window_count END + ?3,
	window_start = CASE WHEN window_start IS NULL OR window_start + rate_period <= ?2 THEN ?2 ELSE window_start END
WHERE queue = ?1 AND rate_limit IS NOT NULL`

	// waitSQL: ?1 a JSON array of the jobs to store waiting, each [id,
	// dependencies (an array), policy]; ?2 the run_at of waiting jobs. One
	// statement for a batch, where one for each job took as long as
	// inserting them.
	waitSQL = `UPDATE {t} SET depends_on = v.v_deps, wait_policy = v.v_policy, wait_run_at = run_at, run_at = ?2
FROM (SELECT value ->> 0 AS v_id, value -> 1 AS v_deps, value ->> 2 AS v_policy FROM json_each(?1)) AS v
WHERE id = v.v_id AND wait_policy IS NULL AND status = 'pending'`

	// waitingSQL: ?1 limit, ?2 the ID to read after. Up to ?1 waiting
	// jobs with IDs after ?2, with what their
	// dependencies are: for each, the number of dependencies, of those
	// completed, of those failed, cancelled or gone, and the first of
	// these (by ID) with its status (NULL when gone).
	waitingSQL = `SELECT w.id, w.wait_policy, count(*),
	count(*) FILTER (WHERE d.status = 'completed'),
	count(*) FILTER (WHERE d.status IN ('failed', 'cancelled') OR d.id IS NULL),
	min(dep.value) FILTER (WHERE d.status IN ('failed', 'cancelled') OR d.id IS NULL)
FROM (SELECT id, wait_policy, depends_on FROM {t} INDEXED BY {waiting_idx}
	WHERE wait_policy IS NOT NULL AND status = 'pending' AND id > ?2 ORDER BY id LIMIT ?1) AS w, json_each(w.depends_on) AS dep
LEFT JOIN {t} AS d ON d.id = dep.value
GROUP BY w.id, w.wait_policy`

	// waitingGroupsSQL is waitingSQL for the waiting jobs of the groups ?3
	// (a JSON array) alone, read through the groups' index.
	waitingGroupsSQL = `SELECT w.id, w.wait_policy, count(*),
	count(*) FILTER (WHERE d.status = 'completed'),
	count(*) FILTER (WHERE d.status IN ('failed', 'cancelled') OR d.id IS NULL),
	min(dep.value) FILTER (WHERE d.status IN ('failed', 'cancelled') OR d.id IS NULL)
FROM (SELECT id, wait_policy, depends_on FROM {t} INDEXED BY {group_idx}
	WHERE group_id IS NOT NULL AND group_id IN (SELECT value FROM json_each(?3)) AND status = 'pending'
		AND wait_policy IS NOT NULL AND id > ?2 ORDER BY id LIMIT ?1) AS w, json_each(w.depends_on) AS dep
LEFT JOIN {t} AS d ON d.id = dep.value
GROUP BY w.id, w.wait_policy`

	depStatusSQL = `SELECT status FROM {t} WHERE id = ?1`

	// anyWaitingSQL: 1 when a job waits, without the write lock.
	anyWaitingSQL = `SELECT EXISTS (SELECT 1 FROM {t} INDEXED BY {waiting_idx} WHERE wait_policy IS NOT NULL)`

	// releaseSQL: ?1 the IDs of the jobs to release (a JSON array), in
	// one statement, where one for each job cost as much as claiming it.
	releaseSQL = `UPDATE {t} SET run_at = wait_run_at, wait_policy = NULL, wait_run_at = NULL
WHERE id IN (SELECT value FROM json_each(?1)) AND wait_policy IS NOT NULL AND status = 'pending'
RETURNING ` + columns

	// releaseCancelSQL: ?1 id, ?2 now, ?3 error (JSON).
	releaseCancelSQL = `UPDATE {t} SET status = 'cancelled', finalized_at = ?2, run_at = wait_run_at,
	wait_policy = NULL, wait_run_at = NULL, errors = {appendError}
WHERE id = ?1 AND wait_policy IS NOT NULL AND status = 'pending'
RETURNING ` + columns
)

// flowQueries holds the statements of flow control, filled in.
type flowQueries struct {
	queueSet, queueList, claimRoom, claimWindow      string
	wait, waiting, waitingGroups, depStatus, release string
	relCancel, anyWaiting                            string
}

func newFlowQueries(table string) *flowQueries {
	r := strings.NewReplacer("{t}", quoteIdent(table), "{q}", quoteIdent(table+"_queues"),
		"{waiting_idx}", quoteIdent(table+"_waiting_idx"), "{group_idx}", quoteIdent(table+"_group_idx"),
		"{appendError}", strings.ReplaceAll(appendError("?3"), "{maxErrors}", strconv.Itoa(driver.MaxErrorsKept)))
	return &flowQueries{
		queueSet: r.Replace(queueSetSQL), queueList: r.Replace(queueListSQL),
		claimRoom: r.Replace(claimRoomSQL), claimWindow: r.Replace(claimWindowSQL),
		wait: r.Replace(waitSQL), waiting: r.Replace(waitingSQL), waitingGroups: r.Replace(waitingGroupsSQL),
		depStatus: r.Replace(depStatusSQL),
		release:   r.Replace(releaseSQL), relCancel: r.Replace(releaseCancelSQL),
		anyWaiting: r.Replace(anyWaitingSQL),
	}
}

// claimRoom returns how many jobs a claim of p may take under the
// queue's state, at most p.Limit, and whether the queue has a rate limit
// whose window the claim must count in.
func (e *executor) claimRoom(ctx context.Context, r runner, p *driver.JobClaimParams) (limit int, rated bool, err error) {
	var (
		paused            bool
		running, rateLeft int
	)
	err = r.queryRow(ctx, e.d.fq.claimRoom, []any{p.Queue, micros(p.Now)}, &paused, &running, &rateLeft)
	if errors.Is(err, errNoRow) {
		return p.Limit, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	if paused {
		return 0, false, nil
	}
	limit = p.Limit
	if running >= 0 {
		limit = min(limit, running)
	}
	if rateLeft >= 0 {
		limit = min(limit, rateLeft)
	}
	return limit, rateLeft >= 0, nil
}

// storeWaits stores the waiting jobs among jobs (waits, their indexes,
// each with a unique key) as waiting, through r, once they were inserted:
// one found a duplicate (results) was not, and the live job is left as it
// is. (Jobs without a unique key are stored waiting by their insert.)
func (e *executor) storeWaits(ctx context.Context, r runner, jobs []*driver.JobInsert, waits []int,
	results []driver.JobInsertResult) error {
	b := append(make([]byte, 0, 128*len(waits)), '[')
	n := 0
	for _, i := range waits {
		if results[i].Duplicate {
			continue
		}
		j := jobs[i]
		if n++; n > 1 {
			b = append(b, ',')
		}
		b = driver.AppendJSONString(append(b, '['), j.ID)
		b = append(append(append(b, ','), rowcodec.StringsJSON(j.DependsOn)...), ',')
		b = append(driver.AppendJSONString(b, string(j.OnDependencyFailure)), ']')
	}
	if n == 0 {
		return nil
	}
	_, err := r.exec(ctx, e.d.fq.wait, string(append(b, ']')), micros(driver.WaitingRunAt))
	return err
}

// QueueStateSet changes a queue's state with one upsert.
func (e *executor) QueueStateSet(ctx context.Context, p *driver.QueueStateSetParams) (*driver.QueueState, error) {
	const op = "queue state set"
	if p == nil {
		return nil, errors.New("sqlitedriver: queue state set: nil params")
	}
	if err := driver.CheckKey("queue", p.Queue); err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	var limit, period, maxRunning any
	if p.Rate != nil {
		limit, period = p.Rate.Limit, p.Rate.Period.Microseconds()
	}
	if p.MaxRunning != nil {
		maxRunning = *p.MaxRunning
	}
	var paused any
	if p.Paused != nil {
		paused = *p.Paused
	}
	var s *driver.QueueState
	err := e.write(ctx, op, func(r runner) error {
		rows, err := r.query(ctx, e.d.fq.queueSet, p.Queue, paused, maxRunning, limit, period, micros(p.Now))
		if err != nil {
			return err
		}
		defer rows.Close()
		if !rows.Next() {
			return cmpErr(rows.Err(), errNoRow)
		}
		if s, err = scanQueueState(rows); err != nil {
			return err
		}
		return rows.Close()
	})
	return s, err
}

// QueueStateList reads every queue state.
func (e *executor) QueueStateList(ctx context.Context, p *driver.QueueStateListParams) ([]*driver.QueueState, error) {
	states := []*driver.QueueState{}
	err := e.read(ctx, "queue state list", func(r runner) error {
		rows, err := r.query(ctx, e.d.fq.queueList)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			s, err := scanQueueState(rows)
			if err != nil {
				return err
			}
			states = append(states, s)
		}
		return rows.Err()
	})
	return states, err
}

func scanQueueState(row scanner) (*driver.QueueState, error) {
	var (
		s                 driver.QueueState
		period, updatedAt int64
	)
	if err := row.Scan(&s.Queue, &s.Paused, &s.MaxRunning, &s.RateLimit, &period, &updatedAt); err != nil {
		return nil, err
	}
	s.RatePeriod = time.Duration(period) * time.Microsecond
	s.UpdatedAt = fromMicros(updatedAt)
	return &s, nil
}

// JobRelease settles the waiting jobs, p.Limit at a time in the order of
// their IDs, each page in a transaction: it reads them with what their
// dependencies are, then releases or cancels those whose dependencies
// allow it.
func (e *executor) JobRelease(ctx context.Context, p *driver.JobReleaseParams) ([]*driver.JobRow, error) {
	if p == nil || p.Limit < 1 {
		return nil, errors.New("sqlitedriver: release: nil params or a limit below 1")
	}
	// Most databases have no waiting job: asking costs a read, where a
	// release would take the write lock every time a client asks.
	var waiting bool
	err := e.read(ctx, "release", func(r runner) error {
		return r.queryRow(ctx, e.d.fq.anyWaiting, nil, &waiting)
	})
	if err != nil || !waiting {
		return nil, err
	}
	var out []*driver.JobRow
	// Page through the waiting jobs by ID.
	for after := ""; ; {
		page, last, seen, err := e.releasePage(ctx, p, after)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if seen < p.Limit {
			return out, nil
		}
		after = last
	}
}

// releasePage settles up to p.Limit waiting jobs with IDs after after,
// and returns the jobs it changed, the last ID it looked at, and how many
// jobs it looked at. It reads them without the write lock, and takes it
// only when some can be settled: the statements that settle a job check
// again that it waits, so one that another client settled or a user
// cancelled meanwhile is left as it is, and a failed dependency is read
// again under the lock before its dependent is settled.
func (e *executor) releasePage(ctx context.Context, p *driver.JobReleaseParams, after string) (
	out []*driver.JobRow, last string, seen int, err error) {
	fq := e.d.fq
	var release []string
	var bad []failedDep
	err = e.read(ctx, "release", func(r runner) error {
		var err error
		query, args := fq.waiting, []any{p.Limit, after}
		if len(p.Groups) > 0 {
			query, args = fq.waitingGroups, append(args, matchableJSON(p.Groups))
		}
		release, bad, last, seen, err = readWaiting(ctx, r, query, args...)
		return err
	})
	if err != nil || len(release)+len(bad) == 0 {
		return nil, last, seen, err
	}
	err = e.writeTx(ctx, "release", []string{fq.depStatus, fq.release, fq.relCancel}, func(r runner) error {
		out = nil
		rel := slices.Clip(release)
		for _, b := range bad {
			var status sql.NullString
			if err := r.queryRow(ctx, fq.depStatus, []any{b.dep}, &status); err != nil && !errors.Is(err, errNoRow) {
				return err
			}
			if !rowcodec.DependencyFailed(driver.JobStatus(status.String)) {
				continue // requeued since it was read: the job waits on
			}
			if b.release {
				rel = append(rel, b.id)
				continue
			}
			msg, err := json.Marshal(driver.AttemptError{At: rowcodec.Stored(p.Now),
				Error: driver.DependencyError(b.dep, driver.JobStatus(status.String))})
			if err != nil {
				return err
			}
			if out, err = appendQueried(ctx, r, out, fq.relCancel, b.id, micros(p.Now), string(msg)); err != nil {
				return err
			}
		}
		if len(rel) > 0 {
			ids, err := json.Marshal(rel)
			if err != nil {
				return err
			}
			out, err = appendQueried(ctx, r, out, fq.release, string(ids))
			return err
		}
		return nil
	})
	return out, last, seen, err
}

// appendQueried appends the jobs query returns, run through r, to jobs.
func appendQueried(ctx context.Context, r runner, jobs []*driver.JobRow, query string, args ...any) ([]*driver.JobRow, error) {
	rows, err := r.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	more, err := scanRows(rows)
	return append(jobs, more...), err
}

// failedDep is a waiting job to settle because of a failed dependency,
// dep: to release (release, its policy DependencyRun) or to cancel.
type failedDep struct {
	id, dep string
	release bool
}

// readWaiting reads up to limit waiting jobs with IDs after after, and
// returns those to release, those to settle because of a failed dependency
// (each with the first such), the last ID read and how many jobs it read.
func readWaiting(ctx context.Context, r runner, query string, args ...any) (release []string, bad []failedDep,
	last string, seen int, err error) {
	rows, err := r.query(ctx, query, args...)
	if err != nil {
		return nil, nil, "", 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id, policy      string
			n, done, failed int
			firstBad        sql.NullString
		)
		if err := rows.Scan(&id, &policy, &n, &done, &failed, &firstBad); err != nil {
			return nil, nil, "", 0, fmt.Errorf("read waiting jobs: %w", err)
		}
		seen++
		last = max(last, id)
		switch rel, can := rowcodec.Settle(driver.DependencyPolicy(policy), n, done, failed); {
		case rel && failed == 0:
			release = append(release, id)
		case rel, can: // on a failed dependency, read again before settling
			bad = append(bad, failedDep{id: id, dep: firstBad.String, release: rel})
		}
	}
	return release, bad, last, seen, rows.Err()
}

// cmpErr returns err, or def when err is nil.
func cmpErr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}
