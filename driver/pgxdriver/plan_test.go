package pgxdriver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// TestPlans checks that claims, heartbeats and rescues are served by the
// partial indexes, so their cost does not grow with finished jobs.
func TestPlans(t *testing.T) {
	t.Parallel()
	d, pool, _ := newDriver(t)
	ctx := t.Context()
	_, err := d.Executor().JobInsertMany(ctx, params(jobs(200, "default")))
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE sluice_jobs`)
	require.NoError(t, err)

	claim, heartbeat, rescue := d.Queries()
	now := time.Now()
	for _, tc := range []struct {
		name, sql, index string
		args             []any
	}{
		{"claim", claim, "sluice_jobs_claim_idx", []any{"c", now, now, "default", []string{"work"}, 10}},
		{"heartbeat", heartbeat, "sluice_jobs_lease_idx", []any{"c", now}},
		{"rescue", rescue, "sluice_jobs_lease_idx", []any{now, `{"error": "x"}`, 10}},
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
