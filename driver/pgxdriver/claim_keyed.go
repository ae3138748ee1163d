package pgxdriver

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/keyplan"
)

// The statements of a keyed claim (see claimKeyed), in the order it runs
// them.
const (
	// keyScopesSQL locks and reads the rows of the scopes of queue $1 and
	// of topics $2, in one order (queues before topics, by name), so that
	// claims that lock several never wait for each other in a circle.
	keyScopesSQL = `SELECT ` + limitsColumns + ` FROM {l}
WHERE key = '' AND ((scope = 'queue' AND name = $1) OR (scope = 'topic' AND name = ANY($2::text[])))
ORDER BY scope, name FOR UPDATE`

	// keyQueueRoomSQL reads queue $1's state at $2 as a claim needs it:
	// paused, what is left of max_running (-1 for no limit), what is left
	// of the rate window (-1 for no limit). It runs after claimLockSQL,
	// so that it counts what the claims before it took.
	keyQueueRoomSQL = `SELECT s.paused,
	CASE WHEN s.max_running IS NULL THEN -1 ELSE greatest(0, s.max_running - (SELECT count(*) FROM {t} AS r
		WHERE r.locked_until IS NOT NULL AND r.status = 'processing' AND r.queue = $1)) END,
	CASE WHEN s.rate_limit IS NULL THEN -1
		WHEN s.window_start IS NULL OR s.window_start + s.rate_period * interval '1 microsecond' <= $2 THEN s.rate_limit
		ELSE greatest(0, s.rate_limit - s.window_count) END
FROM {q} AS s WHERE s.queue = $1`

	// keyQueueWindowSQL counts $3 claims at $2 in queue $1's rate window.
	keyQueueWindowSQL = `UPDATE {q} AS s SET
	window_start = CASE WHEN s.window_start IS NULL OR s.window_start + s.rate_period * interval '1 microsecond' <= $2
		THEN $2 ELSE s.window_start END,
	window_count = CASE WHEN s.window_start IS NULL OR s.window_start + s.rate_period * interval '1 microsecond' <= $2
		THEN 0 ELSE s.window_count END + $3
WHERE s.queue = $1 AND s.rate_limit IS NOT NULL`

	// keyHeadSQL reads the first $4 due jobs of queue $1 at $2 of topics
	// $3 in claim order, each with whether its sequence leaves it free to
	// run.
	keyHeadSQL = `SELECT c.id, coalesce(c.key, ''), c.topic, c.priority, c.run_at, ` + seqFreeSQL + ` FROM (
	SELECT id, key, topic, priority, run_at, sequence, queue FROM {t}
	WHERE status = 'pending' AND queue = $1 AND run_at <= $2 AND topic = ANY($3::text[])
	ORDER BY priority, run_at, id LIMIT $4) AS c`

	// keyWalkSQL walks the keys of queue $1's pending jobs from after $2,
	// $3 of them, and reads of each its first $6 due jobs at $4 of topics
	// $5 in claim order that are in no sequence, and its sequence's next
	// job if that one is due.
	keyWalkSQL = `WITH RECURSIVE keys(key) AS (
	(SELECT key FROM {t} WHERE status = 'pending' AND queue = $1 AND key > $2 ORDER BY key LIMIT 1)
	UNION ALL
	SELECT (SELECT j.key FROM {t} AS j WHERE j.status = 'pending' AND j.queue = $1 AND j.key > k.key
		ORDER BY j.key LIMIT 1)
	FROM keys AS k WHERE k.key IS NOT NULL
)
SELECT c.id, k.key, c.topic, c.priority, c.run_at FROM (SELECT key FROM keys WHERE key IS NOT NULL LIMIT $3) AS k
CROSS JOIN LATERAL (
	(SELECT j.id, j.topic, j.priority, j.run_at FROM {t} AS j
	WHERE j.status = 'pending' AND j.queue = $1 AND j.key = k.key AND j.run_at <= $4 AND j.topic = ANY($5::text[])
		AND j.sequence IS NULL
	ORDER BY j.priority, j.run_at, j.id LIMIT $6)
	UNION ALL
	(SELECT h.id, h.topic, h.priority, h.run_at FROM (
		SELECT s.id, s.topic, s.priority, s.run_at, s.status FROM {t} AS s
		WHERE ` + `s.queue = $1 AND s.key = k.key AND ` + keyplan.SeqHoldingSQL + `
		ORDER BY s.id LIMIT 1) AS h
	WHERE h.status = 'pending' AND h.run_at <= $4 AND h.topic = ANY($5::text[]))
) AS c`

	// keyRunningSQL counts the processing jobs of keys $1 by key, queue and
	// topic.
	keyRunningSQL = `SELECT key, queue, topic, count(*) FROM {t}
WHERE status = 'processing' AND key = ANY($1::text[]) GROUP BY key, queue, topic`

	// keyTopicRunningSQL counts the processing jobs of topics $1, walking
	// the lease index.
	keyTopicRunningSQL = `SELECT topic, count(*) FROM {t}
WHERE locked_until IS NOT NULL AND status = 'processing' AND topic = ANY($1::text[]) GROUP BY topic`

	// keyRowsSQL reads the rows of keys $1 in the scopes of queue $2 and
	// of topics $3.
	keyRowsSQL = `SELECT ` + limitsColumns + ` FROM {l}
WHERE key = ANY($1::text[]) AND ((scope = 'queue' AND name = $2) OR (scope = 'topic' AND name = ANY($3::text[])))`

	// keyClaimSQL claims the jobs $4 that are still pending and that their
	// sequence does not hold, passing over those another transaction
	// holds: $1 client, $2 locked_until, $3 now.
	keyClaimSQL = `UPDATE {t} AS j
SET status = 'processing', locked_by = $1, locked_until = $2, attempted_at = $3,
	attempted_by = $1, attempt = j.attempt + 1
WHERE j.ctid = ANY(ARRAY(
	SELECT c.ctid FROM {t} AS c WHERE c.id = ANY($4::uuid[]) AND c.status = 'pending' AND ` + seqFreeSQL + `
	FOR UPDATE OF c SKIP LOCKED
))
RETURNING {cols}`

	// keyWindowsSQL stores rate windows: parallel arrays $1 scope, $2
	// name, $3 key, $4 window_start, $5 window_count; $6 now, the
	// updated_at of the rows it creates (a key's that counts a window
	// only).
	keyWindowsSQL = `INSERT INTO {l} AS l (scope, name, key, window_start, window_count, updated_at)
SELECT u.scope, u.name, u.key, u.start, u.n, $6
FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::int[]) AS u(scope, name, key, start, n)
ON CONFLICT (scope, name, key) DO UPDATE SET window_start = excluded.window_start, window_count = excluded.window_count`

	// keyCursorSQL stores queue $1's cursor $2.
	keyCursorSQL = `UPDATE {l} SET cursor = $2 WHERE scope = 'queue' AND name = $1 AND key = ''`
)

// keyQueries holds the statements of limits per topic and per key, and of
// sequences, filled in.
type keyQueries struct {
	limitsScopeSet, limitsKeysDelete, limitsKeysInsert, limitsList, keyLoad, sequenceAhead, keyUse, sequencedQueues string
	scopes, queueRoom, queueWindow, head, walk, running, topicRunning, rows, claim, windows, cursor                 string
}

func newKeyQueries(r *strings.Replacer) keyQueries {
	return keyQueries{
		limitsScopeSet: r.Replace(limitsScopeSetSQL), limitsKeysDelete: r.Replace(limitsKeysDeleteSQL),
		limitsKeysInsert: r.Replace(limitsKeysInsertSQL), limitsList: r.Replace(limitsListSQL),
		keyLoad: r.Replace(keyLoadSQL), sequenceAhead: r.Replace(sequenceAheadSQL), keyUse: r.Replace(keyUseSQL),
		sequencedQueues: r.Replace(sequencedQueuesSQL),
		scopes:          r.Replace(keyScopesSQL), queueRoom: r.Replace(keyQueueRoomSQL), queueWindow: r.Replace(keyQueueWindowSQL),
		head: r.Replace(keyHeadSQL), walk: r.Replace(keyWalkSQL), running: r.Replace(keyRunningSQL),
		topicRunning: r.Replace(keyTopicRunningSQL), rows: r.Replace(keyRowsSQL), claim: r.Replace(keyClaimSQL),
		windows: r.Replace(keyWindowsSQL), cursor: r.Replace(keyCursorSQL),
	}
}

// claimKeyed claims under the limits of the queue's and the topics'
// scopes, in one transaction: it locks the scopes' rows (and the queue's
// state, if limited), reads the room the queue leaves, the candidates (the
// first jobs in claim order, and when those do not fill the claim or the
// queue is fair, the jobs of keys walked from the queue's cursor), the
// processing jobs of their keys and their keys' rows, lets keyplan choose,
// and claims what it chose, counting it in the rate windows.
func (e *executor) claimKeyed(ctx context.Context, db dbtx, p *driver.JobClaimParams, topics []string) ([]*driver.JobRow, error) {
	q := &e.d.q.keys
	if !e.inTx {
		if _, err := db.Exec(ctx, lazy); err != nil {
			return nil, err
		}
	}
	st := keyplan.State{Queue: p.Queue, Now: p.Now}
	rows, err := db.Query(ctx, q.scopes, p.Queue, topics)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		r, err := scanLimitsRow(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		st.Scopes = append(st.Scopes, r.Scope())
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	limit, rated := p.Limit, false
	if p.Flow {
		var err error
		if limit, rated, err = e.keyQueueRoom(ctx, db, p); err != nil || limit <= 0 {
			return nil, err
		}
	}
	reads := e.keyReads(ctx, db, p, topics)
	reads.State = func(keys []string, first bool) error { return e.keyState(ctx, db, p, topics, keys, first, &st) }
	c, err := st.Choose(limit, reads)
	if err != nil || len(c.IDs) == 0 {
		return nil, err
	}
	ids := make([]pgtype.UUID, len(c.IDs))
	for i, id := range c.IDs {
		ids[i], _ = parseUUID(id) // read from the table
	}
	claimed, err := scanQuery(ctx, db, q.claim, p.ClientID, p.LockedUntil, p.Now, ids)
	if err != nil || len(claimed) == 0 {
		return claimed, err
	}
	if rated {
		if _, err := db.Exec(ctx, q.queueWindow, p.Queue, p.Now, len(claimed)); err != nil {
			return nil, err
		}
	}
	if err := e.keyCount(ctx, db, p, c, claimed); err != nil {
		return nil, err
	}
	if c.Cursor != nil {
		if _, err := db.Exec(ctx, q.cursor, p.Queue, *c.Cursor); err != nil {
			return nil, err
		}
	}
	return claimed, nil
}

// keyQueueRoom returns how many jobs the queue's state leaves a claim
// room for, at most p.Limit, and whether the claim must count them in the
// queue's rate window.
func (e *executor) keyQueueRoom(ctx context.Context, db dbtx, p *driver.JobClaimParams) (int, bool, error) {
	if _, err := db.Exec(ctx, e.d.q.claimLock, p.Queue); err != nil {
		return 0, false, err
	}
	var (
		paused                bool
		runningLeft, rateLeft int
	)
	err := db.QueryRow(ctx, e.d.q.keys.queueRoom, p.Queue, p.Now).Scan(&paused, &runningLeft, &rateLeft)
	switch {
	case err == pgx.ErrNoRows:
		return p.Limit, false, nil
	case err != nil:
		return 0, false, err
	case paused:
		return 0, false, nil
	}
	limit := p.Limit
	if runningLeft >= 0 {
		limit = min(limit, runningLeft)
	}
	if rateLeft >= 0 {
		limit = min(limit, rateLeft)
	}
	return limit, rateLeft >= 0, nil
}

// keyReads returns the reads of a keyed claim's candidates (see
// keyplan.State.Gather) on db.
func (e *executor) keyReads(ctx context.Context, db dbtx, p *driver.JobClaimParams, topics []string) keyplan.Reads {
	q := &e.d.q.keys
	return keyplan.Reads{
		Head: func(n int) ([]keyplan.HeadJob, error) {
			rows, err := db.Query(ctx, q.head, p.Queue, p.Now, topics, n)
			if err != nil {
				return nil, err
			}
			defer rows.Close()
			var out []keyplan.HeadJob
			for rows.Next() {
				var j keyplan.HeadJob
				if err := rows.Scan(&j.ID, &j.Key, &j.Topic, &j.Priority, &j.RunAt, &j.Free); err != nil {
					return nil, err
				}
				out = append(out, j)
			}
			return out, rows.Err()
		},
		Walk: func(from string, n int, add func(keyplan.Job)) (int, string, error) {
			rows, err := db.Query(ctx, q.walk, p.Queue, from, n, p.Now, topics, n)
			if err != nil {
				return 0, "", err
			}
			defer rows.Close()
			keys := make(map[string]bool)
			last := ""
			for rows.Next() {
				var j keyplan.Job
				if err := rows.Scan(&j.ID, &j.Key, &j.Topic, &j.Priority, &j.RunAt); err != nil {
					return 0, "", err
				}
				keys[j.Key] = true
				last = max(last, j.Key)
				add(j)
			}
			return len(keys), last, rows.Err()
		},
	}
}

// keyState reads what the limits of keys and topics need (see
// keyplan.Reads.State): the keys' processing jobs and rows, and, first,
// the processing jobs of topics whose whole is limited.
func (e *executor) keyState(ctx context.Context, db dbtx, p *driver.JobClaimParams, topics, keys []string, first bool,
	st *keyplan.State) error {
	q := &e.d.q.keys
	var whole []string
	for _, sc := range st.Scopes {
		if first && sc.Kind == string(driver.ScopeTopic) && sc.MaxRunning > 0 {
			whole = append(whole, sc.Name)
		}
	}
	if st.TopicRunning == nil {
		st.TopicRunning = make(map[string]int)
	}
	b := &pgx.Batch{}
	if len(keys) > 0 {
		b.Queue(q.running, keys).Query(func(rows pgx.Rows) error {
			defer rows.Close()
			for rows.Next() {
				var r keyplan.Running
				if err := rows.Scan(&r.Key, &r.Queue, &r.Topic, &r.N); err != nil {
					return err
				}
				st.Running = append(st.Running, r)
			}
			return rows.Err()
		})
		b.Queue(q.rows, keys, p.Queue, topics).Query(func(rows pgx.Rows) error {
			defer rows.Close()
			for rows.Next() {
				r, err := scanLimitsRow(rows)
				if err != nil {
					return err
				}
				st.Keys = append(st.Keys, r.KeyRow())
			}
			return rows.Err()
		})
	}
	if len(whole) > 0 {
		b.Queue(q.topicRunning, whole).Query(func(rows pgx.Rows) error {
			defer rows.Close()
			for rows.Next() {
				var topic string
				var n int
				if err := rows.Scan(&topic, &n); err != nil {
					return err
				}
				st.TopicRunning[topic] = n
			}
			return rows.Err()
		})
	}
	if b.Len() == 0 {
		return nil
	}
	return db.SendBatch(ctx, b).Close()
}

// keyCount counts the jobs claimed in the rate windows of the buckets they
// count against. Jobs the choice took that another transaction took first
// were not claimed, and are not counted.
func (e *executor) keyCount(ctx context.Context, db dbtx, p *driver.JobClaimParams, c *keyplan.Choice,
	claimed []*driver.JobRow) error {
	taken := c.Taken
	if len(claimed) < len(c.IDs) {
		taken = keyplan.Count(claimed, c.Buckets)
	}
	windows := c.Rates.Counted(taken)
	if len(windows) == 0 {
		return nil
	}
	var scopes, names, keys []string
	var starts []time.Time
	var counts []int32
	for b, w := range windows {
		kind, name, key := keyplan.SplitBucket(b)
		scopes, names, keys = append(scopes, kind), append(names, name), append(keys, key)
		starts, counts = append(starts, w.Start), append(counts, int32(w.Count))
	}
	_, err := db.Exec(ctx, e.d.q.keys.windows, scopes, names, keys, starts, counts, p.Now)
	return err
}

// scanQuery runs query on db and reads its rows as jobs.
func scanQuery(ctx context.Context, db dbtx, query string, args ...any) ([]*driver.JobRow, error) {
	rows, err := db.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return scanRows(rows)
}
