package sqlitedriver

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/filtersql"
)

// TestQueryPlans checks with EXPLAIN QUERY PLAN that every statement the
// driver runs finds its rows through an index, never by scanning the table,
// and that claims and rescues read their index in order instead of sorting
// the rows they find.
func TestQueryPlans(t *testing.T) {
	t.Parallel()
	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		checkPlans(t, newPlanDriver(t))
	})
	// Statistics from ANALYZE over a table mostly finished must not lead
	// the planner away from the partial indexes.
	t.Run("Analyzed", func(t *testing.T) {
		t.Parallel()
		d := newPlanDriver(t)
		fillForPlans(t, d)
		_, err := d.db.ExecContext(t.Context(), "ANALYZE")
		require.NoError(t, err)
		checkPlans(t, d)
	})
	// Nor must statistics taken while no job was processing, which show
	// the lease index empty.
	t.Run("AnalyzedIdle", func(t *testing.T) {
		t.Parallel()
		d := newPlanDriver(t)
		fillForPlans(t, d)
		_, err := d.db.ExecContext(t.Context(), "UPDATE sluice_jobs SET status = 'completed', "+
			"locked_by = NULL, locked_until = NULL, finalized_at = 1 WHERE status = 'processing'")
		require.NoError(t, err)
		_, err = d.db.ExecContext(t.Context(), "ANALYZE")
		require.NoError(t, err)
		checkPlans(t, d)
	})
}

func newPlanDriver(t *testing.T) *Driver {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "plan.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	d := New(db)
	require.NoError(t, d.Migrate(t.Context()))
	return d
}

// fillForPlans inserts 2,000 jobs of which 1,500 are completed, 300
// processing and 200 pending.
func fillForPlans(t *testing.T, d *Driver) {
	t.Helper()
	ctx := t.Context()
	now := time.Unix(1_900_000_000, 0)
	var jobs []*driver.JobInsert
	for i := range 2000 {
		j := &driver.JobInsert{ID: fmt.Sprintf("job-%05d", i), Topic: "email", Queue: "default",
			Payload: []byte("{}"), RunAt: now, CreatedAt: now}
		if i%100 == 0 {
			j.Tags = []string{"a", fmt.Sprintf("t%d", i%7)}
		}
		jobs = append(jobs, j)
	}
	ex := d.Executor()
	_, err := ex.JobInsertMany(ctx, &driver.JobInsertManyParams{Jobs: jobs})
	require.NoError(t, err)
	claimed, err := ex.JobClaim(ctx, &driver.JobClaimParams{ClientID: "c", Queue: "default",
		Topics: []string{"email"}, Limit: 1800, Now: now, LockedUntil: now})
	require.NoError(t, err)
	var fin []*driver.JobFinalize
	for _, j := range claimed[:1500] {
		fin = append(fin, &driver.JobFinalize{ID: j.ID, Attempt: j.Attempt, LockedBy: "c", AttemptedAt: j.AttemptedAt,
			Status: driver.StatusCompleted, FinalizedAt: now})
	}
	_, err = ex.JobFinalize(ctx, &driver.JobFinalizeParams{Jobs: fin})
	require.NoError(t, err)
}

func checkPlans(t *testing.T, d *Driver) {
	t.Helper()
	q := d.q

	for _, tc := range []struct {
		name  string
		query string
		args  []any
		index string
	}{
		{"claim", q.claim, []any{"c", 1, 1, "default", `["email"]`, 10}, "sluice_jobs_claim_idx"},
		{"rescue", q.rescue, []any{1, `{}`, 10}, "sluice_jobs_lease_idx"},
		{"heartbeat", q.heartbeat, []any{1, "c"}, "sluice_jobs_lease_idx"},
		{"heartbeatIDs", q.heartbeatIDs, []any{1, "c", `["id"]`}, "sqlite_autoindex_sluice_jobs_1"},
		{"finalize", q.finalize, []any{"id", 1, "c", "completed", 1, 1, 0, nil, nil, 1, nil, nil}, "sqlite_autoindex_sluice_jobs_1"},
		{"finalizeBatch", q.finalizeBatch, []any{`[["id", 1, 1, 1, null]]`, "c", "completed"}, "sqlite_autoindex_sluice_jobs_1"},
		{"finalizeBatchLogs", q.finalizeBatchLogs, []any{`[["id", 1, 1, 1, null, "{}", 0]]`, "c", "completed"},
			"sqlite_autoindex_sluice_jobs_1"},
		{"listTag", listSQL(d, &driver.JobFilter{Tags: []string{"a"}}), []any{`["a"]`}, "sluice_jobs_tags"},
		{"listTagsAll", listSQL(d, &driver.JobFilter{Tags: []string{"a", "b"}}), []any{`["a","b"]`}, "sluice_jobs_tags"},
		{"get", q.get, []any{"id"}, "sqlite_autoindex_sluice_jobs_1"},
		{"countIDs", q.countIDs, []any{`["id"]`}, "sqlite_autoindex_sluice_jobs_1"},
		{"deleteDone", q.deleteDone, []any{`[["id", "completed", 1]]`}, "sqlite_autoindex_sluice_jobs_1"},
		{"count", q.count, []any{"pending", "q", "t", 1}, ""},
		{"selectLiveByKey", q.selectLiveByKey, []any{"k"}, "sluice_jobs_unique_key_idx"},
		{"insertUnique", q.insertUnique, []any{"id", "t", "q", 0, "{}", 0, 1, 1, "k", nil, nil, nil, nil, nil, nil, nil}, ""},
		{"progress", q.progress, []any{"id", 1, "c", "{}", nil, nil}, "sqlite_autoindex_sluice_jobs_1"},
		{"queueRunning", q.queueRunning, []any{"default"}, "sluice_jobs_lease_idx"},
		{"queueAhead", q.queueAhead, []any{"default", 0, 1, "id", 1, 100, nil}, "sluice_jobs_claim_idx"},
		{"queueAheadTopics", q.queueAhead, []any{"default", 0, 1, "id", 1, 100, `["email"]`}, "sluice_jobs_claim_idx"},
		// The keyed claim's reads: keys walked, each key's jobs and its
		// sequence's next, the keys' running jobs, the queues with
		// sequences.
		{"keyHead", d.kq.head, []any{"default", 1, `["email"]`, 10}, "sluice_jobs_claim_idx"},
		{"keyWalkKey", d.kq.walkKey, []any{"default", ""}, "sluice_jobs_key_idx"},
		{"keyWalkJobs", d.kq.walkJobs, []any{"default", "k", 1, `["email"]`, 10}, "sluice_jobs_key_idx"},
		{"keyWalkHead", d.kq.walkHead, []any{"default", "k", 1, `["email"]`}, "sluice_jobs_seq_idx"},
		{"keyRunning", d.kq.running, []any{`["k"]`}, "sluice_jobs_key_run_idx"},
		{"sequencedQueues", d.kq.sequencedQueues, nil, "sluice_jobs_seq_idx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := requireIndexed(t, d, tc.name, tc.query, tc.args, tc.index)
			for _, line := range strings.Split(plan, "\n") {
				// (A temporary b-tree ordering the at most 21 entries of
				// a job's error list is fine.)
				require.NotContains(t, line, "TEMP B-TREE FOR ORDER BY", "sort in %s", tc.name)
			}
		})
	}
}

// listSQL returns the statement that lists the first page of the jobs f
// selects, newest first, as JobList runs it.
func listSQL(d *Driver, f *driver.JobFilter) string {
	q := filtersql.New(d.dialect, f)
	return "SELECT id FROM " + d.sqlTable() + " " + q.Where() + " ORDER BY id DESC LIMIT 50"
}

// requireIndexed requires that the plan of query with args reads no table
// but through an index, and names index (if not empty); it returns the
// plan.
func requireIndexed(t testing.TB, d *Driver, name, query string, args []any, index string) string {
	t.Helper()
	plan := explain(t, d, query, args)
	t.Logf("%s:\n%s", name, plan)
	for _, line := range strings.Split(plan, "\n") {
		if strings.Contains(line, "SCAN sluice_jobs") {
			require.Contains(t, line, "INDEX", "table scan in %s", name)
		}
	}
	if index != "" {
		require.Contains(t, plan, index)
	}
	return plan
}

func explain(t testing.TB, d *Driver, query string, args []any) string {
	t.Helper()
	rows, err := d.db.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+query, args...)
	require.NoError(t, err)
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, notUsed int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &notUsed, &detail))
		lines = append(lines, detail)
	}
	require.NoError(t, rows.Err())
	return strings.Join(lines, "\n")
}
