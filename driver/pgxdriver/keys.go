package pgxdriver

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/keyplan"
)

// The statements of limits per topic and per key, and of sequences. {t} is
// the jobs table, {q} the table of queue states, {l} the table of limits
// (see migration 0012).
const (
	seqHoldersSQL = keyplan.SeqHoldersSQL
	seqFreeSQL    = keyplan.SeqFreeSQL
	limitsColumns = keyplan.LimitsColumns

	// limitsScopeSetSQL stores a scope's row: $1 scope, $2 name, $3
	// max_running, $4 rate_limit, $5 rate_period, $6 key_max_running, $7
	// key_rate_limit, $8 key_rate_period, $9 sequence, $10 fair, $11 now,
	// $12 overrides.
	// Its rate window starts again at the next claim; its cursor stays.
	limitsScopeSetSQL = `INSERT INTO {l} AS l (scope, name, key, max_running, rate_limit, rate_period,
	key_max_running, key_rate_limit, key_rate_period, sequence, fair, updated_at, overrides)
VALUES ($1, $2, '', nullif($3::int, 0), nullif($4::int, 0), nullif($5::bigint, 0),
	nullif($6::int, 0), nullif($7::int, 0), nullif($8::bigint, 0), nullif($9::text, ''), $10, $11, $12)
ON CONFLICT (scope, name, key) DO UPDATE SET max_running = excluded.max_running, rate_limit = excluded.rate_limit,
	rate_period = excluded.rate_period, key_max_running = excluded.key_max_running,
	key_rate_limit = excluded.key_rate_limit, key_rate_period = excluded.key_rate_period,
	sequence = excluded.sequence, fair = excluded.fair, overrides = excluded.overrides, window_start = NULL, window_count = 0,
	updated_at = excluded.updated_at`

	// limitsKeysDeleteSQL deletes the rows of a scope's keys ($1 scope, $2
	// name), or with $3 its own row too.
	limitsKeysDeleteSQL = `DELETE FROM {l} WHERE scope = $1 AND name = $2 AND (key <> '' OR $3)`

	// limitsKeysInsertSQL stores the rows of a scope's keys: $1 scope, $2
	// name, then parallel arrays $3 keys, $4 max_running, $5 rate_limit,
	// $6 rate_period, $7 weight; $8 now.
	limitsKeysInsertSQL = `INSERT INTO {l} (scope, name, key, max_running, rate_limit, rate_period, weight, updated_at)
SELECT $1, $2, u.key, nullif(u.m, 0), nullif(u.r, 0), nullif(u.p, 0), nullif(u.w, 0), $8
FROM unnest($3::text[], $4::int[], $5::int[], $6::bigint[], $7::int[]) AS u(key, m, r, p, w)`

	// limitsListSQL reads the scopes' rows and the rows of keys with limits
	// or a weight of their own, not those that only count a window.
	limitsListSQL = `SELECT ` + limitsColumns + ` FROM {l}
WHERE key = '' OR max_running IS NOT NULL OR rate_limit IS NOT NULL OR weight IS NOT NULL
ORDER BY scope, name, key`

	// keyLoadSQL counts the pending and processing jobs of each key of
	// queue $1, keys with the most first, $2 of them.
	keyLoadSQL = `SELECT key, count(*) FILTER (WHERE status = 'pending'), count(*) FILTER (WHERE status = 'processing')
FROM {t} WHERE queue = $1 AND key IS NOT NULL AND status IN ('pending', 'processing')
GROUP BY key ORDER BY count(*) DESC, key LIMIT $2`

	// keyUseSQL reads the processing jobs of key $3 in scope $1 named $2,
	// and its rate window.
	keyUseSQL = `SELECT (SELECT count(*) FROM {t} WHERE status = 'processing' AND key = $3
		AND CASE WHEN $1 = 'queue' THEN queue = $2 ELSE topic = $2 END),
	(SELECT window_start FROM {l} WHERE scope = $1 AND name = $2 AND key = $3),
	coalesce((SELECT window_count FROM {l} WHERE scope = $1 AND name = $2 AND key = $3), 0)`

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

	// sequenceAheadSQL reads the first job that holds the job $1 in its
	// sequence.
	sequenceAheadSQL = `SELECT {cols} FROM {t} AS c JOIN {t} AS j ON ` + seqHoldersSQL2 + `
WHERE c.id = $1 AND c.sequence IS NOT NULL AND j.id < c.id ORDER BY j.id LIMIT 1`
	seqHoldersSQL2 = `j.queue = c.queue AND j.key = c.key AND j.sequence IS NOT NULL
	AND j.status IN ('pending', 'processing', 'failed') AND (j.status <> 'failed' OR j.sequence = 'hold')`
)

// LimitsSet replaces a scope's limits in one transaction: its row, then
// its keys' rows.
func (e *executor) LimitsSet(ctx context.Context, p *driver.LimitsSetParams) (*driver.Limits, error) {
	const op = "limits set"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("pgxdriver: limits set: nil params")
	}
	l := p.Limits
	if err := driver.CheckKey(string(l.Scope.Kind), l.Scope.Name); err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	for _, k := range l.Keys {
		if err := driver.CheckKey("key", k.Key); err != nil {
			return nil, wrapErr(ctx, op, err)
		}
	}
	kind, name := string(l.Scope.Kind), l.Scope.Name
	err := e.atomic(ctx, func(db dbtx) error {
		if !l.Keyed() {
			_, err := db.Exec(ctx, e.d.q.keys.limitsKeysDelete, kind, name, true)
			return err
		}
		if _, err := db.Exec(ctx, e.d.q.keys.limitsScopeSet, kind, name, l.MaxRunning, l.RateLimit, l.RatePeriod.Microseconds(),
			l.KeyMaxRunning, l.KeyRateLimit, l.KeyRatePeriod.Microseconds(), string(l.Sequence), l.Fair, p.Now, len(l.Keys)); err != nil {
			return err
		}
		if _, err := db.Exec(ctx, e.d.q.keys.limitsKeysDelete, kind, name, false); err != nil {
			return err
		}
		if len(l.Keys) == 0 {
			return nil
		}
		n := len(l.Keys)
		keys, weights := make([]string, n), make([]int32, n)
		maxRunning, rates, periods := make([]int32, n), make([]int32, n), make([]int64, n)
		for i, k := range l.Keys {
			keys[i], maxRunning[i], rates[i] = k.Key, int32(k.MaxRunning), int32(k.RateLimit)
			periods[i], weights[i] = k.RatePeriod.Microseconds(), int32(k.Weight)
		}
		_, err := db.Exec(ctx, e.d.q.keys.limitsKeysInsert, kind, name, keys, maxRunning, rates, periods, weights, p.Now)
		return err
	})
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	return keyplan.AfterSet(&l, p.Now, func() ([]*driver.Limits, error) {
		return e.LimitsList(ctx, &driver.LimitsListParams{})
	})
}

// LimitsList reads every scope's limits with one query.
func (e *executor) LimitsList(ctx context.Context, _ *driver.LimitsListParams) ([]*driver.Limits, error) {
	const op = "limits list"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	rows, err := e.db.Query(ctx, e.d.q.keys.limitsList)
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	defer rows.Close()
	var rs []keyplan.Row
	for rows.Next() {
		r, err := scanLimitsRow(rows)
		if err != nil {
			return nil, wrapErr(ctx, op, err)
		}
		rs = append(rs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	return keyplan.Assemble(rs), nil
}

// scanLimitsRow reads one row of limitsColumns.
func scanLimitsRow(row pgx.Row) (keyplan.Row, error) {
	var (
		r                 keyplan.Row
		period, keyPeriod int64
		cursor            pgtype.Text
		windowStart       pgtype.Timestamptz
	)
	if err := row.Scan(&r.Kind, &r.Name, &r.Key, &r.MaxRunning, &r.RateLimit, &period, &r.KeyMaxRunning,
		&r.KeyRateLimit, &keyPeriod, &r.Sequence, &r.Fair, &r.Weight, &r.Overrides, &cursor, &windowStart, &r.Window.Count,
		&r.UpdatedAt); err != nil {
		return r, err
	}
	r.RatePeriod, r.KeyRatePeriod = time.Duration(period)*time.Microsecond, time.Duration(keyPeriod)*time.Microsecond
	r.Window.Start = fromNullTime(windowStart)
	if cursor.Valid {
		r.Cursor = &cursor.String
	}
	return r, nil
}

// KeyLoad counts the keys of a queue's jobs with one query.
func (e *executor) KeyLoad(ctx context.Context, p *driver.KeyLoadParams) ([]*driver.KeyCount, error) {
	const op = "key load"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil || p.Limit < 1 {
		return nil, errors.New("pgxdriver: key load: nil params or a limit below 1")
	}
	out := []*driver.KeyCount{}
	if !driver.Matchable(p.Queue) {
		return out, nil
	}
	rows, err := e.db.Query(ctx, e.d.q.keys.keyLoad, p.Queue, p.Limit)
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	defer rows.Close()
	for rows.Next() {
		var c driver.KeyCount
		if err := rows.Scan(&c.Key, &c.Pending, &c.Processing); err != nil {
			return nil, wrapErr(ctx, op, err)
		}
		out = append(out, &c)
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	return out, nil
}

// SequenceAhead reads the job that holds a job in its sequence.
func (e *executor) SequenceAhead(ctx context.Context, p *driver.SequenceAheadParams) (*driver.JobRow, error) {
	const op = "sequence ahead"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("pgxdriver: sequence ahead: nil params")
	}
	if _, err := e.JobGet(ctx, &driver.JobGetParams{ID: p.ID}); err != nil {
		return nil, err
	}
	id, _ := parseUUID(p.ID) // JobGet found it
	j, err := scanRow(e.db.QueryRow(ctx, e.d.q.keys.sequenceAhead, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	return j, nil
}

// KeyUse reads a key's use of its limits with one query.
func (e *executor) KeyUse(ctx context.Context, p *driver.KeyUseParams) (*driver.KeyUse, error) {
	const op = "key use"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("pgxdriver: key use: nil params")
	}
	u := &driver.KeyUse{}
	if !driver.Matchable(string(p.Scope.Kind), p.Scope.Name, p.Key) {
		return u, nil
	}
	var start pgtype.Timestamptz
	if err := e.db.QueryRow(ctx, e.d.q.keys.keyUse, string(p.Scope.Kind), p.Scope.Name, p.Key).Scan(&u.Running, &start, &u.WindowCount); err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	u.WindowStart = fromNullTime(start)
	return u, nil
}

// SequencedQueues walks the queues of the sequence index with one query.
func (e *executor) SequencedQueues(ctx context.Context, _ *driver.SequencedQueuesParams) ([]string, error) {
	const op = "sequenced queues"
	if err := e.start(ctx, op); err != nil {
		return nil, err
	}
	rows, err := e.db.Query(ctx, e.d.q.keys.sequencedQueues)
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	queues, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, wrapErr(ctx, op, err)
	}
	return queues, nil
}
