package sqlitedriver

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/keyplan"
)

// The statements of a keyed claim (see claimKeyed), in the order it runs
// them. Lists arrive as JSON arrays.
const (
	// keyScopesSQL reads the rows of the scopes of queue ?1 and of topics
	// ?2.
	keyScopesSQL = `SELECT ` + limitsColumns + ` FROM {l}
WHERE key = '' AND ((scope = 'queue' AND name = ?1) OR (scope = 'topic' AND name IN (SELECT value FROM json_each(?2))))`

	// keyHeadSQL reads the first ?4 due jobs of queue ?1 at ?2 of topics ?3
	// in claim order, each with whether its sequence leaves it free to
	// run. (The unary + as in the claim.)
	keyHeadSQL = `SELECT c.id, coalesce(c.key, ''), c.topic, c.priority, c.run_at, {seqFree} FROM (
	SELECT id, key, topic, priority, run_at, sequence, queue FROM {t}
	WHERE status = 'pending' AND queue = ?1 AND +run_at <= ?2 AND topic IN (SELECT value FROM json_each(?3))
	ORDER BY priority, run_at, id LIMIT +?4) AS c`

	// keyWalkKeySQL reads the first key of queue ?1's pending jobs after
	// ?2.
	keyWalkKeySQL = `SELECT key FROM {t} WHERE status = 'pending' AND queue = ?1 AND key IS NOT NULL AND key > ?2
ORDER BY key LIMIT 1`

	// keyWalkJobsSQL reads the first ?5 due jobs at ?3 of topics ?4, in
	// claim order, of queue ?1 and key ?2 that are in no sequence.
	keyWalkJobsSQL = `SELECT id, key, topic, priority, run_at FROM {t}
WHERE status = 'pending' AND queue = ?1 AND key IS NOT NULL AND key = ?2 AND +run_at <= ?3
	AND topic IN (SELECT value FROM json_each(?4)) AND sequence IS NULL
ORDER BY priority, run_at, id LIMIT +?5`

	// keyWalkHeadSQL reads the next job of the sequence of queue ?1 and key
	// ?2, if it is due at ?3 and of topics ?4.
	keyWalkHeadSQL = `SELECT id, key, topic, priority, run_at FROM (
	SELECT s.id, s.key, s.topic, s.priority, s.run_at, s.status FROM {t} AS s
	WHERE ` + `s.queue = ?1 AND s.key = ?2 AND ` + keyplan.SeqHoldingSQL + ` ORDER BY s.id LIMIT 1)
WHERE status = 'pending' AND run_at <= ?3 AND topic IN (SELECT value FROM json_each(?4))`

	// keyRunningSQL counts the processing jobs of keys ?1 by key, queue and
	// topic.
	keyRunningSQL = `SELECT key, queue, topic, count(*) FROM {t}
WHERE status = 'processing' AND key IS NOT NULL AND key IN (SELECT value FROM json_each(?1)) GROUP BY key, queue, topic`

	// keyTopicRunningSQL counts the processing jobs of topics ?1, walking
	// the lease index.
	keyTopicRunningSQL = `SELECT topic, count(*) FROM {t}
WHERE locked_until IS NOT NULL AND status = 'processing' AND topic IN (SELECT value FROM json_each(?1)) GROUP BY topic`

	// keyRowsSQL reads the rows of keys ?1 in the scopes of queue ?2 and of
	// topics ?3.
	keyRowsSQL = `SELECT ` + limitsColumns + ` FROM {l}
WHERE key IN (SELECT value FROM json_each(?1))
	AND ((scope = 'queue' AND name = ?2) OR (scope = 'topic' AND name IN (SELECT value FROM json_each(?3))))`

	// keyClaimSQL claims the jobs ?4 that are still pending and that their
	// sequence does not hold: ?1 client, ?2 locked_until, ?3 now.
	keyClaimSQL = `UPDATE {t} AS c
SET status = 'processing', locked_by = ?1, locked_until = ?2, attempted_at = ?3,
	attempted_by = ?1, attempt = attempt + 1, counted = counted + 1
WHERE c.id IN (SELECT value FROM json_each(?4)) AND c.status = 'pending' AND {seqFree}
RETURNING ` + columns

	// keyWindowsSQL stores rate windows: ?1 a JSON array of [scope, name,
	// key, window_start, window_count]; ?2 now, the updated_at of the rows
	// it creates (a key's that counts a window only).
	keyWindowsSQL = `INSERT INTO {l} (scope, name, key, window_start, window_count, updated_at)
SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, ?2 FROM json_each(?1) WHERE true
ON CONFLICT (scope, name, key) DO UPDATE SET window_start = excluded.window_start, window_count = excluded.window_count`

	// keyCursorSQL stores queue ?1's cursor ?2.
	keyCursorSQL = `UPDATE {l} SET cursor = ?2 WHERE scope = 'queue' AND name = ?1 AND key = ''`
)

// claimKeyed claims under the limits of the queue's and the topics'
// scopes, in the claim's transaction (SQLite writes one at a time): it
// reads the scopes, the room the queue leaves, the candidates (the first
// jobs in claim order, and when those do not fill the claim or the queue is
// fair, the jobs of keys walked from the queue's cursor), the processing
// jobs of their keys and their keys' rows, lets keyplan choose, and claims
// what it chose, counting it in the rate windows and in the counts.
func (e *executor) claimKeyed(ctx context.Context, r runner, p *driver.JobClaimParams, topics string) ([]*driver.JobRow, error) {
	q := e.d.kq
	st := keyplan.State{Queue: p.Queue, Now: p.Now}
	rows, err := r.query(ctx, q.scopes, p.Queue, topics)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		lr, err := scanLimitsRow(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		st.Scopes = append(st.Scopes, lr.Scope())
	}
	if err := cmpErr(rows.Err(), rows.Close()); err != nil {
		return nil, err
	}
	limit, rated := p.Limit, false
	if p.Flow {
		var err error
		if limit, rated, err = e.claimRoom(ctx, r, p); err != nil || limit <= 0 {
			return nil, err
		}
	}
	reads := e.keyReads(ctx, r, p, topics)
	reads.State = func(keys []string, first bool) error { return e.keyState(ctx, r, topics, keys, first, &st) }
	c, err := st.Choose(limit, reads)
	if err != nil || len(c.IDs) == 0 {
		return nil, err
	}
	ids, _ := json.Marshal(c.IDs) // strings always encode
	rows, err = r.query(ctx, q.claim, p.ClientID, micros(p.LockedUntil), micros(p.Now), string(ids))
	if err != nil {
		return nil, err
	}
	claimed, err := scanRows(rows)
	if err != nil || len(claimed) == 0 {
		return nil, err
	}
	if rated {
		if _, err := r.exec(ctx, e.d.fq.claimWindow, p.Queue, micros(p.Now), len(claimed)); err != nil {
			return nil, err
		}
	}
	taken := c.Taken
	if len(claimed) < len(c.IDs) {
		taken = keyplan.Count(claimed, c.Buckets)
	}
	if err := e.keyWindows(ctx, r, p, c.Rates.Counted(taken)); err != nil {
		return nil, err
	}
	if c.Cursor != nil {
		if _, err := r.exec(ctx, q.cursor, p.Queue, *c.Cursor); err != nil {
			return nil, err
		}
	}
	var moved countMoves
	for _, j := range claimed {
		moved.add(driver.StatusPending, driver.StatusProcessing, j.Queue, j.Topic)
	}
	return claimed, moved.apply(ctx, r)
}

// keyQueriesUsed are the statements claimKeyed may run, prepared before
// its transaction.
func (d *Driver) keyQueriesUsed() []string {
	q := d.kq
	return []string{q.scopes, d.fq.claimRoom, q.head, q.walkKey, q.walkJobs, q.walkHead, q.running, q.topicRunning,
		q.rows, q.claim, d.fq.claimWindow, q.windows, q.cursor, d.q.count}
}

// keyReads returns the reads of a keyed claim's candidates (see
// keyplan.State.Gather) through r: the head in one statement, the walk a
// key at a time (SQLite runs in process, where a statement costs little).
func (e *executor) keyReads(ctx context.Context, r runner, p *driver.JobClaimParams, topics string) keyplan.Reads {
	q := e.d.kq
	return keyplan.Reads{
		Head: func(n int) ([]keyplan.HeadJob, error) {
			var out []keyplan.HeadJob
			err := scanJobs(ctx, r, q.head, []any{p.Queue, micros(p.Now), topics, n}, func(j keyplan.Job, free bool) {
				out = append(out, keyplan.HeadJob{Job: j, Free: free})
			})
			return out, err
		},
		Walk: func(from string, n int, add func(keyplan.Job)) (int, string, error) {
			key, walked := from, 0
			for walked < n {
				err := r.queryRow(ctx, q.walkKey, []any{p.Queue, key}, &key)
				if errors.Is(err, errNoRow) {
					break
				}
				if err != nil {
					return 0, "", err
				}
				walked++
				take := func(j keyplan.Job, _ bool) { add(j) }
				if err := scanJobs(ctx, r, q.walkJobs, []any{p.Queue, key, micros(p.Now), topics, n}, take); err != nil {
					return 0, "", err
				}
				if err := scanJobs(ctx, r, q.walkHead, []any{p.Queue, key, micros(p.Now), topics}, take); err != nil {
					return 0, "", err
				}
			}
			if walked == 0 {
				key = ""
			}
			return walked, key, nil
		},
	}
}

// scanJobs runs query and passes each row (id, key, topic, priority,
// run_at, and with the head's query whether it is free) to fn.
func scanJobs(ctx context.Context, r runner, query string, args []any, fn func(keyplan.Job, bool)) error {
	rows, err := r.query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	for rows.Next() {
		var j keyplan.Job
		var runAt int64
		free := true
		dest := []any{&j.ID, &j.Key, &j.Topic, &j.Priority, &runAt}
		if len(cols) > len(dest) {
			dest = append(dest, &free)
		}
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		j.RunAt = fromMicros(runAt)
		fn(j, free)
	}
	return rows.Err()
}

// keyState reads what the limits of keys and topics need (see
// keyplan.Reads.State): the keys' processing jobs and rows, and, first,
// the processing jobs of topics whose whole is limited.
func (e *executor) keyState(ctx context.Context, r runner, topics string, keys []string, first bool, st *keyplan.State) error {
	q := e.d.kq
	if st.TopicRunning == nil {
		st.TopicRunning = make(map[string]int)
	}
	var whole []string
	for _, sc := range st.Scopes {
		if first && sc.Kind == string(driver.ScopeTopic) && sc.MaxRunning > 0 {
			whole = append(whole, sc.Name)
		}
	}
	if len(whole) > 0 {
		list, _ := json.Marshal(whole)
		rows, err := r.query(ctx, q.topicRunning, string(list))
		if err != nil {
			return err
		}
		for rows.Next() {
			var topic string
			var n int
			if err := rows.Scan(&topic, &n); err != nil {
				rows.Close()
				return err
			}
			st.TopicRunning[topic] = n
		}
		if err := cmpErr(rows.Err(), rows.Close()); err != nil {
			return err
		}
	}
	if len(keys) == 0 {
		return nil
	}
	list, _ := json.Marshal(keys)
	rows, err := r.query(ctx, q.running, string(list))
	if err != nil {
		return err
	}
	for rows.Next() {
		var run keyplan.Running
		if err := rows.Scan(&run.Key, &run.Queue, &run.Topic, &run.N); err != nil {
			rows.Close()
			return err
		}
		st.Running = append(st.Running, run)
	}
	if err := cmpErr(rows.Err(), rows.Close()); err != nil {
		return err
	}
	rows, err = r.query(ctx, q.rows, string(list), st.Queue, topics)
	if err != nil {
		return err
	}
	for rows.Next() {
		lr, err := scanLimitsRow(rows)
		if err != nil {
			rows.Close()
			return err
		}
		st.Keys = append(st.Keys, lr.KeyRow())
	}
	return cmpErr(rows.Err(), rows.Close())
}

// keyWindows stores the rate windows a claim counted in.
func (e *executor) keyWindows(ctx context.Context, r runner, p *driver.JobClaimParams, windows map[string]keyplan.Window) error {
	if len(windows) == 0 {
		return nil
	}
	items := make([][]any, 0, len(windows))
	for b, w := range windows {
		kind, name, key := keyplan.SplitBucket(b)
		items = append(items, []any{kind, name, key, micros(w.Start), w.Count})
	}
	list, err := json.Marshal(items)
	if err != nil {
		return err
	}
	_, err = r.exec(ctx, e.d.kq.windows, string(list), micros(p.Now))
	return err
}
