package sqlitedriver

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"sync"

	"github.com/sluicehq/sluice/driver"
)

// columns are the jobs table's columns in the order scanRow reads them. A
// waiting job's run_at is the one it was enqueued with (see migration
// 0010).
const columns = "id, topic, queue, priority, payload, status, attempt, max_retries, " +
	"coalesce(wait_run_at, run_at), created_at, attempted_at, finalized_at, locked_until, locked_by, " +
	"unique_key, errors, result, attempted_by, progress, tags, metadata, logs, " +
	"depends_on, wait_policy IS NOT NULL AND status = 'pending', key, sequence, group_id, task, callback_of"

// Jobs without a unique key are inserted with multi-row INSERTs. A batch is
// cut into chunks whose sizes are powers of two, so a few prepared statements
// serve every batch size. modernc.org/sqlite matches each bound value to its
// variable by a linear search, so binding costs grow with the square of the
// variables in a statement: chunks stay small, and jobs that share every
// column but their ID and payload (as a batch of one kind usually does) bind
// those columns once per chunk.
const (
	// insertRowsMax is the largest chunk of jobs that share nothing.
	insertRowsMax = 16
	// insertSharedMax is the largest chunk of jobs that share columns.
	insertSharedMax = 32
	// insertSharedMin is the smallest group of jobs sharing columns that is
	// inserted as such; smaller ones go with the jobs that share nothing.
	insertSharedMin = 4
)

// Statements of the operations outside the claim-to-completion path; {t}
// is the quoted table.
const (
	// progressSQL: ?1 id, ?2 attempt, ?3 locked_by, ?4 progress (JSON, or
	// NULL to keep it), ?5 logs (JSON, or NULL to keep them), ?6 their
	// count of records logged (NULL with ?5).
	progressSQL = `UPDATE {t} SET progress = coalesce(?4, progress), logs = coalesce(?5, logs),
	logged = coalesce(?6, logged)
WHERE id = ?1 AND attempt = ?2 AND locked_by = ?3 AND status = 'processing'`

	// queueRunningSQL: ?1 queue. It walks the lease index, which holds only
	// the processing jobs.
	queueRunningSQL = `SELECT locked_by, count(*) FROM {t}
WHERE status = 'processing' AND queue = ?1 GROUP BY locked_by`

	// queueAheadSQL: ?1 queue, ?2 priority, ?3 run_at, ?4 id, ?5 now, ?6
	// limit, ?7 topics (a JSON array, NULL for all). It walks the claim
	// index from the queue's start up to the place, counting due jobs, at
	// most ?6 of them.
	queueAheadSQL = `SELECT count(*) FROM (SELECT 1 FROM {t}
	WHERE status = 'pending' AND queue = ?1 AND (priority, run_at, id) < (?2, ?3, ?4) AND run_at <= ?5
		AND (?7 IS NULL OR topic IN (SELECT value FROM json_each(?7)))
	LIMIT +?6)`
)

// queries holds the driver's SQL, with the quoted table name filled in.
type queries struct {
	// insertRows[i] inserts 1<<i jobs without a unique key.
	insertRows []string
	// insertShared[i] inserts 1<<i jobs without a unique key that share
	// all columns but ID and payload.
	insertShared []string
	// insertTagged[i] inserts 1<<i jobs without a unique key, with their
	// tags and metadata and what they wait for.
	insertTagged []string
	// insertUnique inserts one row unless a live job has its unique key.
	insertUnique string
	// selectLiveByKey selects the live job with a unique key.
	selectLiveByKey string
	claim           string
	finalize        string
	finalizeBatch   string
	// finalizeBatchLogs is finalizeBatch that also writes logs.
	finalizeBatchLogs string
	count             string
	countIDs          string
	// deleteDone deletes the finalized jobs kept for no time.
	deleteDone   string
	progress     string
	heartbeat    string
	heartbeatIDs string
	rescue       string
	get          string
	queueRunning string
	queueAhead   string
}

// newQueries returns the driver's SQL for the jobs table named table.
func newQueries(table string) *queries {
	counts := quoteIdent(table + "_counts")
	table = quoteIdent(table)
	r := strings.NewReplacer("{t}", table, "{t_counts}", counts, "{maxErrors}", strconv.Itoa(driver.MaxErrorsKept))
	q := &queries{
		insertUnique: r.Replace(`INSERT INTO {t} (id, topic, queue, priority, payload, status, attempt,
	max_retries, run_at, created_at, unique_key, tags, metadata, key, sequence, group_id, task, callback_of)
VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND status IN ('pending', 'processing')
DO NOTHING`),
		selectLiveByKey: r.Replace(`SELECT ` + columns + ` FROM {t}
WHERE unique_key = ? AND status IN ('pending', 'processing')`),
		// ?1 client, ?2 locked_until, ?3 now, ?4 queue, ?5 topics (JSON
		// array), ?6 limit. A job that its sequence holds is passed over
		// (see seqFreeSQL; for a job in no sequence, the one test of a
		// NULL). The unary + keeps run_at from being used as an
		// index constraint: with statistics showing few queues and
		// priorities, the planner would otherwise skip-scan the claim
		// index on run_at and sort every due job. The + before a LIMIT
		// variable keeps SQLite from planning with its bound value, which
		// would make it prepare the statement again on every execution.
		claim: r.Replace(`UPDATE {t}
SET status = 'processing', locked_by = ?1, locked_until = ?2, attempted_at = ?3,
	attempted_by = ?1, attempt = attempt + 1, counted = counted + 1
WHERE rowid IN (
	SELECT c.rowid FROM {t} AS c
	WHERE c.status = 'pending' AND c.queue = ?4 AND +c.run_at <= ?3
		AND c.topic IN (SELECT value FROM json_each(?5)) AND ` + seqFreeSQL + `
	ORDER BY c.priority, c.run_at, c.id
	LIMIT +?6)
RETURNING ` + columns),
		// ?1 id, ?2 attempt, ?3 locked_by, ?4 status, ?5 run_at,
		// ?6 finalized_at, ?7 retries given back (snooze), ?8 error (JSON or NULL),
		// ?9 result (JSON or NULL), ?10 attempted_at, ?11 logs (JSON or NULL),
		// ?12 their count of records logged (NULL with ?11).
		finalize: r.Replace(`UPDATE {t}
SET status = ?4, counted = counted + 1,
	run_at = CASE WHEN ?4 = 'pending' THEN ?5 ELSE run_at END,
	finalized_at = CASE WHEN ?4 = 'pending' THEN NULL ELSE ?6 END,
	max_retries = max_retries + ?7,
	locked_by = NULL, locked_until = NULL,
	errors = CASE WHEN ?8 IS NULL THEN errors ELSE ` + appendError("?8") + ` END,
	result = coalesce(?9, result), logs = coalesce(?11, logs), logged = coalesce(?12, logged)
WHERE id = ?1 AND attempt = ?2 AND locked_by = ?3 AND attempted_at = ?10 AND status = 'processing'`),
		// ?1 a JSON array of jobs of one holder (?2) to end in status ?3
		// without an error or a snooze, each [id, attempt, attempted_at,
		// finalized_at, result (JSON text as a string, or null)]: finalize
		// for many jobs at once, found by ID and fenced as finalize is. It
		// returns the jobs it ended. The unary + keeps the planner off the
		// lease index, which statistics taken while no job was processing
		// show as empty: it would walk it for each item, not look each
		// item up by ID.
		finalizeBatch:     r.Replace(finalizeBatchSQL(false)),
		finalizeBatchLogs: r.Replace(finalizeBatchSQL(true)),
		// ?1 status, ?2 queue, ?3 topic, ?4 jobs: adds ?4 to a count, as
		// the driver's claims and completions do for the rows they mark
		// counted (see migration 0004).
		count: r.Replace(`INSERT INTO {t_counts} (status, queue, topic, n) VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (status, queue, topic) DO UPDATE SET n = n + excluded.n`),
		// ?1 the IDs of jobs (a JSON array): how many of them there are by
		// queue and topic.
		countIDs: r.Replace(`SELECT status, queue, topic, count(*) FROM {t}
WHERE id IN (SELECT value FROM json_each(?1)) GROUP BY status, queue, topic`),
		// ?1 a JSON array of [id, status, attempt]: deletes those jobs,
		// found by ID and fenced by status and attempt, in one statement
		// (see driver.JobFinalize.Delete).
		deleteDone: r.Replace(`DELETE FROM {t} WHERE id IN (SELECT j.id FROM json_each(?1) AS d
	JOIN {t} AS j ON j.id = d.value ->> 0 AND j.status = d.value ->> 1 AND j.attempt = d.value ->> 2)`),
		progress: r.Replace(progressSQL),
		// The range on locked_until lets the heartbeat walk the lease
		// index, which holds only processing jobs.
		heartbeat: r.Replace(`UPDATE {t} SET locked_until = ?
WHERE status = 'processing' AND locked_by = ? AND locked_until IS NOT NULL`),
		// heartbeat for the jobs whose IDs are in ?3 (a JSON array) only,
		// found by ID.
		heartbeatIDs: r.Replace(`UPDATE {t} SET locked_until = ?1
WHERE id IN (SELECT value FROM json_each(?3)) AND status = 'processing' AND locked_by = ?2`),
		// ?1 now, ?2 error (JSON, attempt, start and client to be filled
		// in), ?3 limit.
		rescue: r.Replace(`UPDATE {t}
SET status = CASE WHEN attempt <= max_retries THEN 'pending' ELSE 'failed' END,
	run_at = CASE WHEN attempt <= max_retries THEN ?1 ELSE run_at END,
	finalized_at = CASE WHEN attempt <= max_retries THEN NULL ELSE ?1 END,
	locked_by = NULL, locked_until = NULL,
	errors = ` + appendError("json_set(?2, '$.attempt', attempt, '$.started_at', "+
			rfc3339("attempted_at")+", '$.client_id', locked_by)") + `
WHERE rowid IN (
	SELECT rowid FROM {t}
	WHERE status = 'processing' AND locked_until < ?1
	ORDER BY locked_until
	LIMIT +?3)
RETURNING ` + columns),
		get:          r.Replace(`SELECT ` + columns + ` FROM {t} WHERE id = ?`),
		queueRunning: r.Replace(queueRunningSQL),
		queueAhead:   r.Replace(queueAheadSQL),
	}
	for n := 1; n <= insertRowsMax; n *= 2 {
		q.insertRows = append(q.insertRows, insertRowsSQL(table, n))
	}
	for n := 1; n <= insertSharedMax; n *= 2 {
		q.insertShared = append(q.insertShared, insertSharedSQL(table, n))
	}
	for n := 1; n <= insertRowsMax; n *= 2 {
		q.insertTagged = append(q.insertTagged, insertTaggedSQL(table, n))
	}
	return q
}

// finalizeBatchSQL returns the statement that ends, at once, many claims
// of one holder (?2) in one status (?3) without an error or a snooze: ?1
// is a JSON array of items, each [id, attempt, attempted_at, finalized_at,
// result (JSON text as a string, or null)], and with logs a sixth and a
// seventh element, the logs (JSON text as a string, or null) and their
// count of records logged (or null). It is finalize for many jobs
// at once, found by ID and fenced as finalize is, and returns the jobs it
// ended. The unary + keeps the planner off the lease index, which
// statistics taken while no job was processing show as empty: it would
// walk it for each item, not look each item up by ID. Without logs the
// statement reads no sixth or seventh element, so a batch without logs costs what it
// did before jobs had any.
func finalizeBatchSQL(logs bool) string {
	set, cols := "", ""
	if logs {
		set = ", logs = coalesce(v.v_logs, logs), logged = coalesce(v.v_logged, logged)"
		cols = ", value ->> 5 AS v_logs, value ->> 6 AS v_logged"
	}
	return `UPDATE {t}
SET status = ?3, counted = counted + 1, finalized_at = v.v_finalized_at,
	locked_by = NULL, locked_until = NULL, result = coalesce(v.v_result, result)` + set + `
FROM (SELECT value ->> 0 AS v_id, value ->> 1 AS v_attempt, value ->> 2 AS v_attempted_at,
		value ->> 3 AS v_finalized_at, value ->> 4 AS v_result` + cols + `
	FROM json_each(?1)) AS v
WHERE id = v.v_id AND attempt = v.v_attempt AND locked_by = ?2
	AND attempted_at = v.v_attempted_at AND +status = 'processing'
RETURNING id, queue, topic`
}

// appendError returns an SQL expression for the errors column with the JSON
// object elem appended, keeping the newest driver.MaxErrorsKept entries.
func appendError(elem string) string {
	e := "json(" + elem + ")"
	appended := "json_insert(errors, '$[#]', " + e + ")"
	return `(CASE
		WHEN errors IS NULL THEN json_array(` + e + `)
		WHEN json_array_length(errors) < {maxErrors} THEN ` + appended + `
		ELSE (SELECT json_group_array(json(value) ORDER BY key)
			FROM json_each(` + appended + `)
			WHERE key > json_array_length(errors) - {maxErrors})
	END)`
}

// rfc3339 returns an SQL expression for the time stored in col (integer
// microseconds) as JSON holds times: RFC 3339 in UTC, with microseconds.
func rfc3339(col string) string {
	return "strftime('%Y-%m-%dT%H:%M:%S', " + col + " / 1000000, 'unixepoch') || printf('.%06dZ', " + col + " % 1000000)"
}

// quoteIdent returns name quoted as an SQL identifier, so that a name that
// is also a keyword (such as "order") is read as a name.
func quoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// insertRowsSQL returns a statement inserting n jobs into table (quoted),
// eight variables each: id, topic, queue, priority, payload, max_retries,
// run_at, created_at.
func insertRowsSQL(table string, n int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	b.WriteString(table)
	b.WriteString(" (id, topic, queue, priority, payload, max_retries, run_at, created_at, status, attempt) VALUES ")
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?,?,?,?,?,?,?,'pending',0)")
	}
	return b.String()
}

// insertTaggedSQL returns a statement inserting n jobs into table (quoted),
// eighteen variables each: those of insertRowsSQL, then tags, metadata,
// key, sequence, group_id, task, callback_of, and for a job waiting for
// others its dependencies, its policy and the run time it was enqueued
// with (its run_at then driver.WaitingRunAt).
func insertTaggedSQL(table string, n int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	b.WriteString(table)
	b.WriteString(" (id, topic, queue, priority, payload, max_retries, run_at, created_at, tags, metadata, " +
		"key, sequence, group_id, task, callback_of, depends_on, wait_policy, wait_run_at, status, attempt) VALUES ")
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,'pending',0)")
	}
	return b.String()
}

// insertSharedSQL returns a statement inserting n jobs into table (quoted)
// that share all columns but two: id and payload for each job, then topic,
// queue, priority, max_retries, run_at and created_at once. Every variable
// is anonymous, so each binds in the order it appears.
func insertSharedSQL(table string, n int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	b.WriteString(table)
	b.WriteString(` (id, payload, topic, queue, priority, max_retries, run_at, created_at, status, attempt)
SELECT v.column1, v.column2, s.column1, s.column2, s.column3, s.column4, s.column5, s.column6, 'pending', 0
FROM (VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?)")
	}
	b.WriteString(") AS v, (VALUES (?,?,?,?,?,?)) AS s")
	return b.String()
}

// stmtCache keeps statements prepared on the driver's handle, by query.
// database/sql prepares each one again on every connection it runs on.
type stmtCache struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// get returns the statement for query, preparing it on the handle if needed
// (and the probe query too, the first time). It takes a connection from the
// pool, so it must never be called while this goroutine holds one (inside a
// transaction).
func (c *stmtCache) get(ctx context.Context, query string) (*sql.Stmt, error) {
	if st := c.lookup(query); st != nil {
		return st, nil
	}
	if query != probeQuery && c.lookup(probeQuery) == nil {
		_, _ = c.get(ctx, probeQuery) // best-effort
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev := c.m[query]; prev != nil {
		_ = st.Close()
		return prev, nil
	}
	if c.m == nil {
		c.m = make(map[string]*sql.Stmt)
	}
	c.m[query] = st
	return st, nil
}

// lookup returns the statement for query if it was prepared, or nil.
func (c *stmtCache) lookup(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[query]
}

// sqlTable returns the jobs table's name quoted for SQL.
func (d *Driver) sqlTable() string { return quoteIdent(d.table) }

// sqlClients returns the client records table's name quoted for SQL.
func (d *Driver) sqlClients() string { return quoteIdent(d.table + "_clients") }

// sqlCounts returns the counts table's name quoted for SQL.
func (d *Driver) sqlCounts() string { return quoteIdent(d.table + "_counts") }
