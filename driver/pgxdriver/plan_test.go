package pgxdriver_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

// TestPlans checks that claims, heartbeats and rescues are served by the
// partial indexes, so their cost does not grow with finished jobs.
func TestPlans(t *testing.T) {
	t.Parallel()
	d, pool, _ := newDriver(t)
	ctx := t.Context()
	_, err := d.Executor().JobInsertMany(ctx, params(jobs(200, "default")))
	require.NoError(t, err)
	tagged := jobs(200, "default")
	for i, j := range tagged {
		j.Tags = []string{"t", fmt.Sprintf("t%d", i%10)}
	}
	_, err = d.Executor().JobInsertMany(ctx, params(tagged))
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE sluice_jobs`)
	require.NoError(t, err)
	// A total over tags counts through the index of tags.
	for _, f := range []*driver.JobFilter{{Tags: []string{"t1"}}, {Tags: []string{"t1", "t2"}, AnyTag: true}} {
		sql, args := d.CountQuery(f)
		plan := explain(t, pool, sql, args...)
		require.Contains(t, plan, "sluice_jobs_tags_idx", "count by tags %v plan:\n%s", f.Tags, plan)
	}

	claim, heartbeat, rescue := d.Queries()
	running, ahead := d.QueueLoadQueries()
	now := time.Now()
	id := "0190f5d2-0000-7000-8000-000000000001"
	for _, tc := range []struct {
		name, sql, index string
		args             []any
	}{
		{"claim", claim, "sluice_jobs_claim_idx", []any{"c", now, now, "default", []string{"work"}, 10}},
		{"flowClaim", d.FlowClaimQuery(), "sluice_jobs_claim_idx", []any{"c", now, now, "default", []string{"work"}, 10}},
		{"heartbeat", heartbeat, "sluice_jobs_lease_idx", []any{"c", now}},
		{"rescue", rescue, "sluice_jobs_lease_idx", []any{now, `{"error": "x"}`, 10}},
		{"queueRunning", running, "sluice_jobs_lease_idx", []any{"default"}},
		{"queueAhead", ahead, "sluice_jobs_claim_idx", []any{"default", 0, now, id, now, 100, nil}},
		{"queueAheadTopics", ahead, "sluice_jobs_claim_idx", []any{"default", 0, now, id, now, 100, []string{"work"}}},
	} {
		plan := explain(t, pool, tc.sql, tc.args...)
		require.Contains(t, plan, tc.index, "%s plan:\n%s", tc.name, plan)
	}
}

// explain returns the plan of sql with args, with sequential scans
// discouraged: on a small table they are cheapest, and the test is about
// which index the planner can use.
func explain(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) string {
	t.Helper()
	ctx := t.Context()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SET LOCAL enable_seqscan = off`)
	require.NoError(t, err)
	rows, err := tx.Query(ctx, "EXPLAIN "+sql, args...)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return strings.Join(lines, "\n")
}

// TestPlansWithStaleStatistics checks that claims and rescues of large
// batches reach their rows through indexes, and completions not through
// the lease index, even when the
// statistics predate the claims, as they do on a server whose autovacuum
// (and so auto-analyze) is off or behind: no plan may scan the whole table
// or compare every processing job with every item of a batch.
func TestPlansWithStaleStatistics(t *testing.T) {
	t.Parallel()
	d, pool, _ := newDriver(t)
	ctx := t.Context()
	for range 10 {
		_, err := d.Executor().JobInsertMany(ctx, params(jobs(2000, "default")))
		require.NoError(t, err)
	}
	_, err := pool.Exec(ctx, `ANALYZE sluice_jobs`) // no job processing yet
	require.NoError(t, err)
	claimed := claim(t, d, "c", 5000)
	require.Len(t, claimed, 5000)

	claimSQL, _, rescueSQL := d.Queries()
	runningSQL, aheadSQL := d.QueueLoadQueries()
	now := time.Now()
	ids := make([]string, 1000)
	attempts, give := make([]int32, 1000), make([]int32, 1000)
	lockedBy, statuses := make([]string, 1000), make([]string, 1000)
	for i := range ids {
		ids[i], attempts[i], lockedBy[i], statuses[i] = claimed[i].ID, 1, "c", "completed"
	}
	times, attemptedAts := make([]time.Time, 1000), make([]time.Time, 1000)
	for i := range attemptedAts {
		attemptedAts[i] = claimed[i].AttemptedAt
	}
	for _, tc := range []struct {
		name, sql string
		args      []any
	}{
		{"claim", claimSQL, []any{"c", now, now, "default", []string{"work"}, 1000}},
		{"rescue", rescueSQL, []any{now, `{"error": "x"}`, 1000}},
		{"queueRunning", runningSQL, []any{"default"}},
		{"queueAhead", aheadSQL, []any{"default", 0, now, claimed[4999].ID, now, 10000, []string{"work"}}},
	} {
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			plan := explainMode(t, pool, mode, "EXPLAIN", tc.sql, tc.args...)
			require.NotContains(t, plan, "Seq Scan", "%s (%s) plan:\n%.2000s", tc.name, mode, plan)
		}
	}

	// A completion of 1,000 jobs, run for real (and rolled back): on a
	// table this small a scan may be cheapest, but no plan may compare
	// each job with each item, as one did when a condition on j.status
	// alone made the planner expect a single processing job.
	processing := make([]string, 1000)
	for i := range processing {
		processing[i] = "processing"
	}
	args := []any{ids, attempts, lockedBy, statuses, times, times, give, make([]*string, 1000), make([]*string, 1000), processing,
		attemptedAts, make([]*string, 1000), make([]*int32, 1000)}
	requireNoCrossJoin(t, pool, "finalize", d.FinalizeQuery(), args)
	// With a notification job to insert for each: the same update.
	item := make([]int64, 1000)
	newIDs, texts, ints := make([]string, 1000), make([]string, 1000), make([]int32, 1000)
	for i := range item {
		item[i], newIDs[i], texts[i] = int64(i+1), fmt.Sprintf("0190f5d2-0000-7000-9000-%012d", i), "{}"
	}
	requireNoCrossJoin(t, pool, "finalizeInsert", d.FinalizeInsertQuery(), append(args, item, newIDs, texts, texts, ints,
		texts, ints, times, times, make([]*string, 1000), make([]*string, 1000), make([]*string, 1000), make([]*string, 1000),
		make([]*string, 1000), make([]*string, 1000), make([]*string, 1000)))
	requireNoCrossJoin(t, pool, "complete", d.CompleteQuery(), []any{ids, attempts, "c", attemptedAts, times})
	requireNoCrossJoin(t, pool, "completeDelete", d.CompleteDeleteQuery(), []any{ids, attempts, "c", attemptedAts})
	requireNoCrossJoin(t, pool, "completeLogs", d.CompleteLogsQuery(), []any{ids, attempts, "c", attemptedAts, times,
		make([]*string, 1000), make([]*int32, 1000)})
	// A progress write of as many jobs, likewise.
	progress := make([]string, 1000)
	for i := range progress {
		progress[i] = `{"percent": 50}`
	}
	requireNoCrossJoin(t, pool, "progress", d.ProgressQuery(), []any{ids, attempts, lockedBy, progress, processing,
		make([]*string, 1000), make([]*int32, 1000)})
}

// requireNoCrossJoin runs the batch statement sql (EXPLAIN ANALYZE, rolled
// back), which must update (or delete) 1,000 jobs without comparing each
// with each item.
func requireNoCrossJoin(t *testing.T, pool *pgxpool.Pool, name, sql string, args []any) {
	t.Helper()
	// The driver runs these statements under a generic plan, made once
	// per connection, which must find the jobs by their IDs whatever the
	// statistics say; a custom plan must be sound too (on a table this
	// small a scan may be cheapest).
	for _, mode := range []string{"force_generic_plan", "force_custom_plan"} {
		plan := explainMode(t, pool, mode, "EXPLAIN (ANALYZE, COSTS OFF)", sql, args...)
		require.Regexp(t, `(?:Update|Delete) on sluice_jobs j \(actual time=[0-9.]+ rows=1000 `, plan, "%s (%s): %.3000s", name, mode, plan)
		if mode == "force_generic_plan" {
			require.False(t, strings.Contains(plan, "Seq Scan"), "%s (%s) scans the table: %.3000s", name, mode, plan)
		}
		for _, m := range regexp.MustCompile(`Rows Removed by (?:Join )?Filter: (\d+)`).FindAllStringSubmatch(plan, -1) {
			n, err := strconv.Atoi(m[1])
			require.NoError(t, err)
			require.LessOrEqual(t, n, 20_000, "%s (%s) compared too many rows:\n%.3000s", name, mode, plan)
		}
	}
}

// explainMode returns the plan of sql with args under plan_cache_mode
// mode, with the planner's default costs, as explain ("EXPLAIN", or
// "EXPLAIN (ANALYZE, COSTS OFF)", which runs sql: the transaction is rolled
// back) shows it.
func explainMode(t testing.TB, pool *pgxpool.Pool, mode, explain, sql string, args ...any) string {
	t.Helper()
	ctx := t.Context()
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT set_config('plan_cache_mode', $1, true)`, mode)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `PREPARE sluice_plan_probe AS `+sql)
	require.NoError(t, err)
	placeholders := make([]string, len(args))
	for i := range args {
		placeholders[i] = fmt.Sprintf("$%d", i+1)
	}
	// EXECUTE's arguments are expressions, not parameters: pgx writes the
	// values into the statement as literals.
	rows, err := tx.Query(ctx, explain+" EXECUTE sluice_plan_probe("+strings.Join(placeholders, ", ")+")",
		append([]any{pgx.QueryExecModeSimpleProtocol}, args...)...)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `DEALLOCATE sluice_plan_probe`)
	require.NoError(t, err)
	return strings.Join(lines, "\n")
}
