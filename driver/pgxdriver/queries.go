package pgxdriver

import (
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/driver"
)

// columns are the jobs table's columns in the order scanRow reads them,
// qualified by the alias j.
// A waiting job's run_at is the one it was enqueued with (see migration
// 0011).
const columns = "j.id, j.topic, j.queue, j.priority, j.payload, j.status, j.attempt, j.max_retries, " +
	"coalesce(j.wait_run_at, j.run_at) AS run_at, j.created_at, j.attempted_at, j.finalized_at, j.locked_until, j.locked_by, " +
	"j.unique_key, j.errors, j.result, j.attempted_by, j.progress, j.tags, j.metadata, j.logs, " +
	"j.depends_on, (j.wait_policy IS NOT NULL AND j.status = 'pending') AS waiting, j.key, j.sequence, " +
	"j.group_id, j.task, j.callback_of"

// The driver's SQL. {t} is the quoted, qualified table, {cols} the columns
// scanRow reads, {finalizeErrors} and {rescueErrors} the errors column of j
// with the item's or the rescue's error appended (see appendError).
const (
	// insertRowsSQL inserts jobs without a unique key from parallel
	// arrays.
	insertRowsSQL = `INSERT INTO {t} (id, topic, queue, priority, payload, status, attempt,
	max_retries, run_at, created_at)
SELECT u.id, u.topic, u.queue, u.priority, u.payload::jsonb, 'pending', 0, u.max_retries, u.run_at, u.created_at
FROM unnest($1::uuid[], $2::text[], $3::text[], $4::int[], $5::text[], $6::int[],
	$7::timestamptz[], $8::timestamptz[])
	AS u(id, topic, queue, priority, payload, max_retries, run_at, created_at)`

	// insertTaggedSQL is insertRowsSQL for jobs with tags or metadata: each
	// job's tags arrive as a JSON array and its metadata as JSON text
	// (NULL for none), since an array of arrays cannot be ragged.
	insertTaggedSQL = `INSERT INTO {t} (id, topic, queue, priority, payload, status, attempt,
	max_retries, run_at, created_at, tags, metadata, key, sequence, group_id, task, callback_of)
SELECT u.id, u.topic, u.queue, u.priority, u.payload::jsonb, 'pending', 0, u.max_retries, u.run_at, u.created_at,
	CASE WHEN u.tags IS NULL THEN NULL ELSE ARRAY(SELECT jsonb_array_elements_text(u.tags::jsonb)) END,
	u.metadata::jsonb, u.key, u.sequence, u.group_id::uuid, u.task, u.callback_of::uuid
FROM unnest($1::uuid[], $2::text[], $3::text[], $4::int[], $5::text[], $6::int[],
	$7::timestamptz[], $8::timestamptz[], $9::text[], $10::text[], $11::text[], $12::text[],
	$13::text[], $14::text[], $15::text[])
	AS u(id, topic, queue, priority, payload, max_retries, run_at, created_at, tags, metadata, key, sequence,
		group_id, task, callback_of)`

	// insertWaitingSQL is insertTaggedSQL for a batch with jobs waiting for
	// others (see [driver.JobInsert.DependsOn]): $16 their dependencies (a
	// JSON array; NULL for a job that waits for none), $17 their policies,
	// $18 the run times they were enqueued with, while $7 holds
	// driver.WaitingRunAt for them. A waiting job is stored waiting by its
	// insert, not by an update after it.
	insertWaitingSQL = `INSERT INTO {t} (id, topic, queue, priority, payload, status, attempt,
	max_retries, run_at, created_at, tags, metadata, key, sequence, group_id, task, callback_of,
	depends_on, wait_policy, wait_run_at)
SELECT u.id, u.topic, u.queue, u.priority, u.payload::jsonb, 'pending', 0, u.max_retries, u.run_at, u.created_at,
	CASE WHEN u.tags IS NULL THEN NULL ELSE ARRAY(SELECT jsonb_array_elements_text(u.tags::jsonb)) END,
	u.metadata::jsonb, u.key, u.sequence, u.group_id::uuid, u.task, u.callback_of::uuid,
	u.deps::jsonb, u.policy, u.wait_run_at
FROM unnest($1::uuid[], $2::text[], $3::text[], $4::int[], $5::text[], $6::int[],
	$7::timestamptz[], $8::timestamptz[], $9::text[], $10::text[], $11::text[], $12::text[],
	$13::text[], $14::text[], $15::text[], $16::text[], $17::text[], $18::timestamptz[])
	AS u(id, topic, queue, priority, payload, max_retries, run_at, created_at, tags, metadata, key, sequence,
		group_id, task, callback_of, deps, policy, wait_run_at)`

	// insertUniqueSQL inserts one job unless a live job has its unique key,
	// and returns the new row (false) or the live one (true). $1 id, $2
	// topic, $3 queue, $4 priority, $5 payload, $6 max_retries, $7 run_at,
	// $8 created_at, $9 unique_key, $10 tags, $11 metadata, $12 key, $13
	// sequence, $14 group_id, $15 task, $16 callback_of. The live row is
	// read only when nothing
	// was inserted; it is visible to this statement unless it was committed
	// after the statement began, and then nothing is returned and the
	// caller runs the statement again.
	insertUniqueSQL = `WITH ins AS (
	INSERT INTO {t} AS j (id, topic, queue, priority, payload, status, attempt,
		max_retries, run_at, created_at, unique_key, tags, metadata, key, sequence, group_id, task, callback_of)
	VALUES ($1, $2, $3, $4, $5::text::jsonb, 'pending', 0, $6, $7, $8, $9, $10::text[], $11::text::jsonb, $12, $13,
		$14::uuid, $15, $16::uuid)
	ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND status IN ('pending', 'processing')
	DO NOTHING
	RETURNING {cols}
)
SELECT false, * FROM ins
UNION ALL
SELECT true, {cols} FROM {t} AS j
WHERE j.unique_key = $9 AND j.status IN ('pending', 'processing') AND NOT EXISTS (SELECT FROM ins)`

	// notifySQL notifies channel $1 once for each queue in $2.
	notifySQL = `SELECT pg_notify($1, q) FROM unnest($2::text[]) AS q`

	// claimSQL: $1 client, $2 locked_until, $3 now, $4 queue, $5 topics,
	// $6 limit. The jobs are locked by the subquery and updated where they
	// lie, by their tuple IDs (ctid): as = ANY over an array rather than a
	// join, so that no plan, whatever the statistics say, joins against a
	// scan of the whole table when the limit is large, and by tuple ID
	// rather than by primary key, which saves a lookup per job (a fifth of
	// a claim's time). A locked row cannot move before the statement ends;
	// were a tuple ID ever stale, the update would skip that row, which
	// stays pending. A job that its sequence holds is passed over (see
	// seqFreeSQL; for a job in no sequence, the one test of a NULL). This
	// is the claim of a client that has seen no state for the queue
	// (JobClaimParams.Flow false).
	claimBareSQL = `UPDATE {t} AS j
SET status = 'processing', locked_by = $1, locked_until = $2, attempted_at = $3,
	attempted_by = $1, attempt = j.attempt + 1
WHERE j.ctid = ANY(ARRAY(
	SELECT c.ctid FROM {t} AS c
	WHERE c.status = 'pending' AND c.queue = $4 AND c.run_at <= $3 AND c.topic = ANY($5::text[]) AND {seqFree}
	ORDER BY c.priority, c.run_at, c.id
	LIMIT $6
	FOR UPDATE OF c SKIP LOCKED
))
RETURNING {cols}`

	// claimSQL is claimBareSQL for a queue with a state: the state bounds
	// the limit (newQueries puts claimRoomSQL in place of $6), and the
	// jobs claimed are counted in its rate window (claimWindowSQL).
	claimSQL = `WITH claimed AS (` + claimBareSQL + `),
counted AS ({window})
SELECT * FROM claimed`

	// finalizeSQL ends claims given as parallel arrays, one element per
	// item, numbered by ord; the items that matched come back by number.
	// Nothing in the WHERE clause restricts j alone but the IDs: a job's
	// expected status arrives as an array ($10, every element
	// 'processing') and is compared in the join. Statistics taken before
	// the jobs were claimed say almost none is processing; a condition on
	// j.status alone would make the planner expect one row and compare
	// every job of the table or batch with every item.
	finalizeSQL = `UPDATE {t} AS j
SET status = i.status,
	run_at = CASE WHEN i.status = 'pending' THEN i.run_at ELSE j.run_at END,
	finalized_at = CASE WHEN i.status = 'pending' THEN NULL ELSE i.finalized_at END,
	max_retries = j.max_retries + i.give_back,
	locked_by = NULL, locked_until = NULL,
	errors = CASE WHEN i.error IS NULL THEN j.errors ELSE {finalizeErrors} END,
	result = coalesce(i.result::jsonb, j.result), logs = coalesce(i.logs::jsonb, j.logs),
	logged = coalesce(i.logged, j.logged)
FROM unnest($1::uuid[], $2::int[], $3::text[], $4::text[], $5::timestamptz[],
	$6::timestamptz[], $7::int[], $8::text[], $9::text[], $10::text[], $11::timestamptz[], $12::text[], $13::int[])
	WITH ORDINALITY
	AS i(id, attempt, locked_by, status, run_at, finalized_at, give_back, error, result, from_status,
		attempted_at, logs, logged, ord)
WHERE j.id = ANY($1::uuid[]) AND j.id = i.id AND j.attempt = i.attempt AND j.locked_by = i.locked_by
	AND j.attempted_at = i.attempted_at AND j.status = i.from_status
RETURNING i.ord`

	// completeSQL is finalizeSQL for the common case, jobs of one holder
	// ($3) completed without an error, a result or a snooze, which writes
	// the same and sends a fifth of the bytes: ids, attempts, claim times
	// and completion times. The holder and the expected status are
	// spread into arrays by the server, so that they are still compared in
	// the join.
	completeSQL = `UPDATE {t} AS j
SET status = 'completed', finalized_at = i.finalized_at, locked_by = NULL, locked_until = NULL{completeLogsSet}
FROM unnest($1::uuid[], $2::int[], array_fill($3::text, ARRAY[cardinality($1::uuid[])]), $4::timestamptz[],
	$5::timestamptz[], array_fill('processing'::text, ARRAY[cardinality($1::uuid[])]){completeLogsArrays}) WITH ORDINALITY
	AS i(id, attempt, locked_by, attempted_at, finalized_at, from_status{completeLogsCols}, ord)
WHERE j.id = ANY($1::uuid[]) AND j.id = i.id AND j.attempt = i.attempt AND j.locked_by = i.locked_by
	AND j.attempted_at = i.attempted_at AND j.status = i.from_status
RETURNING i.ord`

	// completeDeleteSQL is completeSQL for jobs whose completed status is
	// kept for no time (driver.JobFinalize.Delete) and which belong to no
	// group: it deletes them instead, fenced the same way, so that such a
	// completion costs one DELETE rather than an UPDATE and a DELETE. No
	// one can tell the two apart: both end in one transaction with the
	// row gone, and the delete trigger counts it out of processing as
	// the update and delete together would have.
	completeDeleteSQL = `DELETE FROM {t} AS j
USING unnest($1::uuid[], $2::int[], array_fill($3::text, ARRAY[cardinality($1::uuid[])]), $4::timestamptz[],
	array_fill('processing'::text, ARRAY[cardinality($1::uuid[])])) WITH ORDINALITY
	AS i(id, attempt, locked_by, attempted_at, from_status, ord)
WHERE j.id = ANY($1::uuid[]) AND j.id = i.id AND j.attempt = i.attempt AND j.locked_by = i.locked_by
	AND j.attempted_at = i.attempted_at AND j.status = i.from_status
RETURNING i.ord`

	// progressSQL sets the progress of claims given as parallel arrays, as
	// finalizeSQL ends them, for the same reasons; the items that matched
	// come back by number.
	progressSQL = `UPDATE {t} AS j
SET progress = coalesce(i.progress::jsonb, j.progress), logs = coalesce(i.logs::jsonb, j.logs),
	logged = coalesce(i.logged, j.logged)
FROM unnest($1::uuid[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[]) WITH ORDINALITY
	AS i(id, attempt, locked_by, progress, from_status, logs, logged, ord)
WHERE j.id = ANY($1::uuid[]) AND j.id = i.id AND j.attempt = i.attempt AND j.locked_by = i.locked_by
	AND j.status = i.from_status
RETURNING i.ord`

	// finalizeInsertSQL is finalizeSQL that also inserts, in the same
	// statement, the jobs of the items that matched: $14 holds each job's
	// item (its number among the items), $15 to $24 its columns as
	// insertRowsSQL takes them.
	finalizeInsertSQL = `WITH done AS (` + finalizeSQL + `),
ins AS (INSERT INTO {t} (id, topic, queue, priority, payload, status, attempt,
	max_retries, run_at, created_at, tags, metadata, key, sequence, group_id, task, callback_of)
	SELECT u.id, u.topic, u.queue, u.priority, u.payload::jsonb, 'pending', 0, u.max_retries, u.run_at,
		u.created_at, CASE WHEN u.tags IS NULL THEN NULL ELSE ARRAY(SELECT jsonb_array_elements_text(u.tags::jsonb)) END,
		u.metadata::jsonb, u.key, u.sequence, u.group_id::uuid, u.task, u.callback_of::uuid
	FROM unnest($14::int8[], $15::uuid[], $16::text[], $17::text[], $18::int[], $19::text[], $20::int[],
		$21::timestamptz[], $22::timestamptz[], $23::text[], $24::text[], $25::text[], $26::text[],
		$27::text[], $28::text[], $29::text[])
		AS u(item, id, topic, queue, priority, payload, max_retries, run_at, created_at, tags, metadata, key, sequence,
			group_id, task, callback_of)
	WHERE u.item IN (SELECT ord FROM done))
SELECT ord FROM done`

	// heartbeatSQL: $1 client, $2 locked_until. The condition on
	// locked_until lets it walk the lease index, which holds only the jobs
	// with a lease: the processing ones.
	heartbeatSQL = `UPDATE {t} SET locked_until = $2
WHERE status = 'processing' AND locked_by = $1 AND locked_until IS NOT NULL`

	// heartbeatIDsSQL is heartbeatSQL for the jobs $3 only, found by ID.
	heartbeatIDsSQL = `UPDATE {t} SET locked_until = $2
WHERE id = ANY($3::uuid[]) AND status = 'processing' AND locked_by = $1`

	// rescueSQL: $1 now, $2 error (JSON; its attempt, start and client
	// are set per job), $3 limit. Shaped as claimSQL is, for the same
	// reasons. $1 is cast where nothing else types it: under the simple
	// protocol (pgx's QueryExecModeSimpleProtocol, for poolers) it arrives
	// as a quoted literal, which CASE ... THEN NULL ELSE would take for text.
	rescueSQL = `UPDATE {t} AS j
SET status = CASE WHEN j.attempt <= j.max_retries THEN 'pending' ELSE 'failed' END,
	run_at = CASE WHEN j.attempt <= j.max_retries THEN $1 ELSE j.run_at END,
	finalized_at = CASE WHEN j.attempt <= j.max_retries THEN NULL ELSE $1::timestamptz END,
	locked_by = NULL, locked_until = NULL,
	errors = {rescueErrors}
WHERE j.ctid = ANY(ARRAY(
	SELECT ctid FROM {t}
	WHERE status = 'processing' AND locked_until < $1
	ORDER BY locked_until
	LIMIT $3
	FOR UPDATE SKIP LOCKED
))
RETURNING {cols}`

	getSQL = `SELECT {cols} FROM {t} AS j WHERE j.id = $1`

	// queueRunningSQL: $1 queue. The condition on locked_until lets it walk
	// the lease index, which holds only the processing jobs.
	queueRunningSQL = `SELECT locked_by, count(*) FROM {t}
WHERE locked_until IS NOT NULL AND status = 'processing' AND queue = $1 GROUP BY locked_by`

	// queueAheadSQL: $1 queue, $2 priority, $3 run_at, $4 id, $5 now, $6
	// limit, $7 topics (NULL for all). It walks the claim index from the
	// queue's start up to the place, counting due jobs, at most $6 of
	// them. The ORDER BY, which the index gives for free, keeps a generic
	// plan from choosing a scan of the whole table that would stop after
	// $6 matches.
	queueAheadSQL = `SELECT count(*) FROM (SELECT FROM {t}
	WHERE status = 'pending' AND queue = $1 AND (priority, run_at, id) < ($2, $3, $4) AND run_at <= $5
		AND ($7::text[] IS NULL OR topic = ANY($7::text[]))
	ORDER BY priority, run_at, id
	LIMIT $6) AS ahead`
)

// queries holds the driver's SQL, with the table name filled in, and the
// channel inserts notify.
type queries struct {
	channel      string
	insertRows   string
	insertTagged string
	// insertWaiting is insertWaitingSQL filled in.
	insertWaiting string
	insertUnique  string
	notify        string
	claim         string
	claimBare     string
	finalize      string
	finalizeIns   string
	complete      string
	// completeLogs is complete that also writes the jobs' logs: the
	// completions of jobs that logged, without the general statement's
	// other arrays.
	completeLogs string
	// completeDelete deletes plain completions that are kept for no
	// time.
	completeDelete string
	progress       string
	heartbeat      string
	heartbeatIDs   string
	rescue         string
	get            string
	fold           string
	queueRunning   string
	queueAhead     string
	// claimLock locks a limited queue's state before a claim, and
	// claimLockLazy does it with the settings of lazy.
	claimLock, claimLockLazy string
	// The statements of flow control: queue states and waiting jobs.
	wait, queueSet, queueList, anyWaiting, waiting, waitingGroups, depStatus, release, releaseCancel string
	// keys holds the statements of limits per topic and per key.
	keys keyQueries
	// groups holds the statements of workflows and batches.
	groups groupQueries
}

func newQueries(table, counts, countLog, channel, queues, limits, groups string) *queries {
	r := strings.NewReplacer("{t}", table, "{cols}", columns, "{q}", queues, "{l}", limits, "{g}", groups,
		"{finalizeErrors}", appendError("i.error::jsonb"),
		"{rescueErrors}", appendError("$2::text::jsonb || "+attemptJSON))
	fill := func(query string) string {
		query = strings.NewReplacer("{room}", claimRoomSQL, "{window}", claimWindowSQL, "{seqFree}", seqFreeSQL).Replace(query)
		return r.Replace(query)
	}
	return &queries{
		keys:           newKeyQueries(r),
		groups:         newGroupQueries(r),
		claimLock:      fill(claimLockSQL),
		claimLockLazy:  fill(claimLockLazySQL),
		wait:           r.Replace(waitSQL),
		queueSet:       r.Replace(queueSetSQL),
		queueList:      r.Replace(queueListSQL),
		anyWaiting:     r.Replace(anyWaitingSQL),
		waiting:        r.Replace(waitingSQL),
		waitingGroups:  r.Replace(waitingGroupsSQL),
		depStatus:      r.Replace(depStatusSQL),
		release:        r.Replace(releaseSQL),
		releaseCancel:  r.Replace(releaseCancelSQL),
		channel:        channel,
		insertRows:     fill(insertRowsSQL),
		insertTagged:   fill(insertTaggedSQL),
		insertWaiting:  fill(insertWaitingSQL),
		insertUnique:   fill(insertUniqueSQL),
		notify:         notifySQL,
		claim:          fill(strings.Replace(claimSQL, "LIMIT $6", "LIMIT {room}", 1)),
		claimBare:      fill(claimBareSQL),
		finalize:       fill(finalizeSQL),
		finalizeIns:    fill(finalizeInsertSQL),
		complete:       completeQuery(fill(completeSQL), false),
		completeLogs:   completeQuery(fill(completeSQL), true),
		completeDelete: fill(completeDeleteSQL),
		progress:       fill(progressSQL),
		heartbeat:      fill(heartbeatSQL),
		heartbeatIDs:   fill(heartbeatIDsSQL),
		rescue:         fill(rescueSQL),
		get:            fill(getSQL),
		fold:           strings.NewReplacer("{log}", countLog, "{counts}", counts).Replace(foldSQL),
		queueRunning:   fill(queueRunningSQL),
		queueAhead:     fill(queueAheadSQL),
	}
}

// attemptJSON is a jsonb object with the number, start and client of the
// attempt j is processing, for the error a rescue records. jsonb renders
// the start in ISO 8601 with the session's offset; the decoder returns it
// in UTC.
const attemptJSON = `jsonb_strip_nulls(jsonb_build_object(
	'attempt', j.attempt, 'started_at', j.attempted_at, 'client_id', j.locked_by))`

// appendError returns an SQL expression for the errors column of j with the
// jsonb object elem appended, keeping the newest driver.MaxErrorsKept.
func appendError(elem string) string {
	keep := strconv.Itoa(driver.MaxErrorsKept)
	return `(CASE
		WHEN j.errors IS NULL THEN jsonb_build_array(` + elem + `)
		WHEN jsonb_array_length(j.errors) < ` + keep + ` THEN j.errors || jsonb_build_array(` + elem + `)
		ELSE (SELECT jsonb_agg(e.v ORDER BY e.n)
			FROM jsonb_array_elements(j.errors || jsonb_build_array(` + elem + `)) WITH ORDINALITY AS e(v, n)
			WHERE e.n > jsonb_array_length(j.errors) + 1 - ` + keep + `)
	END)`
}

// completeQuery fills in completeSQL, with logs ($6, the logs as JSON text
// or null, and $7, their count of records logged, or null) or without.
func completeQuery(q string, logs bool) string {
	set, arrays, cols := "", "", ""
	if logs {
		set = ", logs = coalesce(i.logs::jsonb, j.logs), logged = coalesce(i.logged, j.logged)"
		arrays, cols = ", $6::text[], $7::int[]", ", logs, logged"
	}
	return strings.NewReplacer("{completeLogsSet}", set, "{completeLogsArrays}", arrays, "{completeLogsCols}", cols).Replace(q)
}
