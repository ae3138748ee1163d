package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/keyplan"
)

// The statements of limits per topic and per key, and of sequences. {t} is
// the jobs table, {l} the table of limits (see migration 0011).
const (
	seqHoldersSQL = keyplan.SeqHoldersSQL
	seqFreeSQL    = keyplan.SeqFreeSQL
	limitsColumns = keyplan.LimitsColumns

	// limitsScopeSetSQL stores a scope's row: ?1 scope, ?2 name, ?3
	// max_running, ?4 rate_limit, ?5 rate_period, ?6 key_max_running, ?7
	// key_rate_limit, ?8 key_rate_period, ?9 sequence, ?10 fair, ?11 now,
	// ?12 overrides.
	// Its rate window starts again at the next claim; its cursor stays.
	limitsScopeSetSQL = `INSERT INTO {l} (scope, name, key, max_running, rate_limit, rate_period,
	key_max_running, key_rate_limit, key_rate_period, sequence, fair, updated_at, overrides)
VALUES (?1, ?2, '', nullif(?3, 0), nullif(?4, 0), nullif(?5, 0), nullif(?6, 0), nullif(?7, 0), nullif(?8, 0),
	nullif(?9, ''), ?10, ?11, ?12)
ON CONFLICT (scope, name, key) DO UPDATE SET max_running = excluded.max_running, rate_limit = excluded.rate_limit,
	rate_period = excluded.rate_period, key_max_running = excluded.key_max_running,
	key_rate_limit = excluded.key_rate_limit, key_rate_period = excluded.key_rate_period,
	sequence = excluded.sequence, fair = excluded.fair, overrides = excluded.overrides, window_start = NULL, window_count = 0,
	updated_at = excluded.updated_at`

	// limitsKeysDeleteSQL deletes the rows of a scope's keys (?1 scope, ?2
	// name), or with ?3 its own row too.
	limitsKeysDeleteSQL = `DELETE FROM {l} WHERE scope = ?1 AND name = ?2 AND (key <> '' OR ?3)`

	// limitsKeysInsertSQL stores the rows of a scope's keys: ?1 scope, ?2
	// name, ?3 a JSON array of [key, max_running, rate_limit, rate_period,
	// weight], ?4 now.
	limitsKeysInsertSQL = `INSERT INTO {l} (scope, name, key, max_running, rate_limit, rate_period, weight, updated_at)
SELECT ?1, ?2, value ->> 0, nullif(value ->> 1, 0), nullif(value ->> 2, 0), nullif(value ->> 3, 0),
	nullif(value ->> 4, 0), ?4
FROM json_each(?3)`

	// limitsListSQL reads the scopes' rows and the rows of keys with limits
	// or a weight of their own, not those that only count a window.
	limitsListSQL = `SELECT ` + limitsColumns + ` FROM {l}
WHERE key = '' OR max_running IS NOT NULL OR rate_limit IS NOT NULL OR weight IS NOT NULL
ORDER BY scope, name, key`

	// keyLoadSQL counts the pending and processing jobs of each key of
	// queue ?1, keys with the most first, ?2 of them.
	keyLoadSQL = `SELECT key, count(*) FILTER (WHERE status = 'pending'), count(*) FILTER (WHERE status = 'processing')
FROM {t} WHERE queue = ?1 AND key IS NOT NULL AND status IN ('pending', 'processing')
GROUP BY key ORDER BY count(*) DESC, key LIMIT ?2`

	// keyUseSQL reads the processing jobs of key ?3 in scope ?1 named ?2,
	// and its rate window.
	keyUseSQL = `SELECT (SELECT count(*) FROM {t} WHERE status = 'processing' AND key IS NOT NULL AND key = ?3
		AND CASE WHEN ?1 = 'queue' THEN queue = ?2 ELSE topic = ?2 END),
	(SELECT window_start FROM {l} WHERE scope = ?1 AND name = ?2 AND key = ?3),
	coalesce((SELECT window_count FROM {l} WHERE scope = ?1 AND name = ?2 AND key = ?3), 0)`

	// sequencedQueuesSQL walks the distinct queues of the sequence index.
	sequencedQueuesSQL = `WITH RECURSIVE q(queue) AS (
	SELECT (SELECT queue FROM {t} WHERE sequence IS NOT NULL AND status IN ('pending', 'processing', 'failed')
		ORDER BY queue LIMIT 1)
	UNION ALL
	SELECT (SELECT j.queue FROM {t} AS j WHERE j.sequence IS NOT NULL AND j.status IN ('pending', 'processing', 'failed')
		AND j.queue > q.queue ORDER BY j.queue LIMIT 1)
	FROM q WHERE q.queue IS NOT NULL
)
SELECT queue FROM q WHERE queue IS NOT NULL`

	// sequenceAheadSQL reads the first job that holds, in its sequence, a
	// job of queue ?1, key ?2 and ID ?3.
	sequenceAheadSQL = `SELECT ` + columns + ` FROM {t}
WHERE queue = ?1 AND key = ?2 AND sequence IS NOT NULL AND status IN ('pending', 'processing', 'failed')
	AND (status <> 'failed' OR sequence = 'hold') AND id < ?3 ORDER BY id LIMIT 1`
)

// keyQueries holds the statements of limits per topic and per key, and of
// sequences, filled in.
type keyQueries struct {
	limitsScopeSet, limitsKeysDelete, limitsKeysInsert, limitsList, keyLoad, sequenceAhead, keyUse, sequencedQueues string
	scopes, head, walkKey, walkJobs, walkHead, running, topicRunning, rows, claim, windows, cursor                  string
}

func newKeyQueries(table string) *keyQueries {
	r := strings.NewReplacer("{t}", quoteIdent(table), "{l}", quoteIdent(table+"_limits"), "{seqFree}", seqFreeSQL)
	f := func(s string) string { return r.Replace(r.Replace(s)) }
	return &keyQueries{
		limitsScopeSet: f(limitsScopeSetSQL), limitsKeysDelete: f(limitsKeysDeleteSQL),
		limitsKeysInsert: f(limitsKeysInsertSQL), limitsList: f(limitsListSQL), keyLoad: f(keyLoadSQL),
		sequenceAhead: f(sequenceAheadSQL), keyUse: f(keyUseSQL), sequencedQueues: f(sequencedQueuesSQL),
		scopes: f(keyScopesSQL), head: f(keyHeadSQL), walkKey: f(keyWalkKeySQL), walkJobs: f(keyWalkJobsSQL),
		walkHead: f(keyWalkHeadSQL), running: f(keyRunningSQL), topicRunning: f(keyTopicRunningSQL),
		rows: f(keyRowsSQL), claim: f(keyClaimSQL), windows: f(keyWindowsSQL), cursor: f(keyCursorSQL),
	}
}

// LimitsSet replaces a scope's limits in one transaction: its row, then
// its keys' rows.
func (e *executor) LimitsSet(ctx context.Context, p *driver.LimitsSetParams) (*driver.Limits, error) {
	const op = "limits set"
	if p == nil {
		return nil, errors.New("sqlitedriver: limits set: nil params")
	}
	l := p.Limits
	if err := driver.CheckKey(string(l.Scope.Kind), l.Scope.Name); err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	b := []byte{'['}
	for i, k := range l.Keys {
		if err := driver.CheckKey("key", k.Key); err != nil {
			return nil, wrapErr(ctx, op, err)
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = driver.AppendJSONString(append(b, '['), k.Key)
		for _, n := range []int64{int64(k.MaxRunning), int64(k.RateLimit), k.RatePeriod.Microseconds(), int64(k.Weight)} {
			b = strconv.AppendInt(append(b, ','), n, 10)
		}
		b = append(b, ']')
	}
	keys := string(append(b, ']'))
	q := e.d.kq
	kind, name := string(l.Scope.Kind), l.Scope.Name
	err := e.writeTx(ctx, op, []string{q.limitsScopeSet, q.limitsKeysDelete, q.limitsKeysInsert}, func(r runner) error {
		if !l.Keyed() {
			_, err := r.exec(ctx, q.limitsKeysDelete, kind, name, true)
			return err
		}
		if _, err := r.exec(ctx, q.limitsScopeSet, kind, name, l.MaxRunning, l.RateLimit, l.RatePeriod.Microseconds(),
			l.KeyMaxRunning, l.KeyRateLimit, l.KeyRatePeriod.Microseconds(), string(l.Sequence), l.Fair, micros(p.Now), len(l.Keys)); err != nil {
			return err
		}
		if _, err := r.exec(ctx, q.limitsKeysDelete, kind, name, false); err != nil {
			return err
		}
		if len(l.Keys) == 0 {
			return nil
		}
		_, err := r.exec(ctx, q.limitsKeysInsert, kind, name, keys, micros(p.Now))
		return err
	})
	if err != nil {
		return nil, err
	}
	return keyplan.AfterSet(&l, fromMicros(micros(p.Now)), func() ([]*driver.Limits, error) {
		return e.LimitsList(ctx, &driver.LimitsListParams{})
	})
}

// LimitsList reads every scope's limits with one query.
func (e *executor) LimitsList(ctx context.Context, _ *driver.LimitsListParams) ([]*driver.Limits, error) {
	const op = "limits list"
	var rs []keyplan.Row
	err := e.read(ctx, op, func(r runner) error {
		rows, err := r.query(ctx, e.d.kq.limitsList)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			lr, err := scanLimitsRow(rows)
			if err != nil {
				return err
			}
			rs = append(rs, lr)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return keyplan.Assemble(rs), nil
}

// scanLimitsRow reads one row of limitsColumns.
func scanLimitsRow(row scanner) (keyplan.Row, error) {
	var (
		r                            keyplan.Row
		period, keyPeriod, updatedAt int64
		cursor                       sql.NullString
		windowStart                  sql.NullInt64
	)
	if err := row.Scan(&r.Kind, &r.Name, &r.Key, &r.MaxRunning, &r.RateLimit, &period, &r.KeyMaxRunning,
		&r.KeyRateLimit, &keyPeriod, &r.Sequence, &r.Fair, &r.Weight, &r.Overrides, &cursor, &windowStart, &r.Window.Count,
		&updatedAt); err != nil {
		return r, err
	}
	r.RatePeriod, r.KeyRatePeriod = time.Duration(period)*time.Microsecond, time.Duration(keyPeriod)*time.Microsecond
	r.Window.Start, r.UpdatedAt = fromNullMicros(windowStart), fromMicros(updatedAt)
	if cursor.Valid {
		r.Cursor = &cursor.String
	}
	return r, nil
}

// KeyLoad counts the keys of a queue's jobs with one query.
func (e *executor) KeyLoad(ctx context.Context, p *driver.KeyLoadParams) ([]*driver.KeyCount, error) {
	const op = "key load"
	if p == nil || p.Limit < 1 {
		return nil, errors.New("sqlitedriver: key load: nil params or a limit below 1")
	}
	out := []*driver.KeyCount{}
	if !driver.Matchable(p.Queue) {
		return out, nil
	}
	err := e.read(ctx, op, func(r runner) error {
		rows, err := r.query(ctx, e.d.kq.keyLoad, p.Queue, p.Limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c driver.KeyCount
			if err := rows.Scan(&c.Key, &c.Pending, &c.Processing); err != nil {
				return err
			}
			out = append(out, &c)
		}
		return rows.Err()
	})
	return out, err
}

// SequenceAhead reads the job that holds a job in its sequence.
func (e *executor) SequenceAhead(ctx context.Context, p *driver.SequenceAheadParams) (*driver.JobRow, error) {
	const op = "sequence ahead"
	if p == nil {
		return nil, errors.New("sqlitedriver: sequence ahead: nil params")
	}
	job, err := e.JobGet(ctx, &driver.JobGetParams{ID: p.ID})
	if err != nil || job.Sequence == "" {
		return nil, err
	}
	var j *driver.JobRow
	err = e.read(ctx, op, func(r runner) error {
		rows, err := r.query(ctx, e.d.kq.sequenceAhead, job.Queue, job.Key, job.ID)
		if err != nil {
			return err
		}
		found, err := scanRows(rows)
		if len(found) > 0 {
			j = found[0]
		}
		return err
	})
	return j, err
}

// KeyUse reads a key's use of its limits with one query.
func (e *executor) KeyUse(ctx context.Context, p *driver.KeyUseParams) (*driver.KeyUse, error) {
	if p == nil {
		return nil, errors.New("sqlitedriver: key use: nil params")
	}
	u := &driver.KeyUse{}
	if !driver.Matchable(string(p.Scope.Kind), p.Scope.Name, p.Key) {
		return u, nil
	}
	var start sql.NullInt64
	err := e.read(ctx, "key use", func(r runner) error {
		return r.queryRow(ctx, e.d.kq.keyUse, []any{string(p.Scope.Kind), p.Scope.Name, p.Key}, &u.Running, &start, &u.WindowCount)
	})
	if err != nil {
		return nil, err
	}
	u.WindowStart = fromNullMicros(start)
	return u, nil
}

// SequencedQueues walks the queues of the sequence index with one query.
func (e *executor) SequencedQueues(ctx context.Context, _ *driver.SequencedQueuesParams) ([]string, error) {
	var queues []string
	err := e.read(ctx, "sequenced queues", func(r runner) (err error) {
		queues, err = queryStrings(ctx, r, e.d.kq.sequencedQueues)
		return err
	})
	return queues, err
}
