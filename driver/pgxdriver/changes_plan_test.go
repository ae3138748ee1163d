package pgxdriver_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/pgxdriver"
)

// TestChangesPlans checks that every read of a change feed's tick, and the
// outcomes per bucket of Stats, find their rows through the index their
// part names, under custom and generic plans and statistics taken while
// most jobs were finished: none reads the whole table, so their cost grows
// with what they return.
func TestChangesPlans(t *testing.T) {
	t.Parallel()
	d, pool, _ := newDriver(t)
	ctx := t.Context()
	for range 5 {
		_, err := d.Executor().JobInsertMany(ctx, params(jobs(2000, "default")))
		require.NoError(t, err)
	}
	claimed := claim(t, d, "c", 9000)
	now := time.Now()
	var fin []*driver.JobFinalize
	for _, j := range claimed[:8500] {
		fin = append(fin, &driver.JobFinalize{ID: j.ID, Attempt: j.Attempt, LockedBy: "c", AttemptedAt: j.AttemptedAt,
			Status: driver.StatusCompleted, FinalizedAt: now.Add(-time.Hour)})
	}
	_, err := d.Executor().JobFinalize(ctx, &driver.JobFinalizeParams{Jobs: fin})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE sluice_jobs`)
	require.NoError(t, err)
	requireChangesPlans(t, d, pool, []string{claimed[0].ID, claimed[1].ID}, now.Add(-time.Minute))

	// With a log of actions of thousands of entries, a recent span of it
	// is read through its index.
	ids := make([]string, 3000)
	for i := range ids {
		ids[i] = claimed[i].ID
	}
	_, err = d.Executor().JobDelete(ctx, &driver.JobActParams{IDs: ids, Now: now.Add(-time.Hour)})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE sluice_jobs; ANALYZE sluice_jobs_acts`)
	require.NoError(t, err)
	_, _, _, _, acted, deleted := d.ChangesQueries()
	for name, sql := range map[string]string{"acted": acted, "deleted": deleted} {
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			plan := explainMode(t, pool, mode, "EXPLAIN", sql, now.Add(-time.Minute), 1001)
			require.Contains(t, plan, "sluice_jobs_acts_idx", "%s (%s) plan:\n%s", name, mode, plan)
		}
	}
}

// requireChangesPlans checks the plans of a change feed's reads and of the
// outcomes per bucket of Stats over d's table, with ids for the reads by
// ID and recent meaning after recent. BenchmarkInspect runs it on a
// million jobs.
func requireChangesPlans(tb testing.TB, d *pgxdriver.Driver, pool *pgxpool.Pool, ids []string, recent time.Time) {
	tb.Helper()
	running, byID, created, finalized, acted, deleted := d.ChangesQueries()
	countRunning, countCreated, countFinalized, countActs := d.ChangesCountQueries()
	series, seriesArgs := d.SeriesQuery(&driver.JobFilter{Topics: []string{"work"}}, recent, time.Minute)
	lo := pgtype.UUID{Bytes: [16]byte{0x01, 0x90}, Valid: true}
	hi := pgtype.UUID{Bytes: [16]byte{0x01, 0x91}, Valid: true}
	for _, tc := range []struct {
		name, sql, index string
		args             []any
	}{
		{"running", running, "sluice_jobs_lease_idx", []any{10001}},
		{"byID", byID, "sluice_jobs_pkey", []any{ids}},
		{"created", created, "sluice_jobs_pkey", []any{lo, hi, 1001}},
		{"finalized", finalized, "sluice_jobs_finalized_idx", []any{recent, 1001}},
		{"series", series, "sluice_jobs_finalized_idx", seriesArgs},
		// The log of actions is small, and may be too small to be read
		// through its index: the jobs are read by primary key.
		{"acted", acted, "sluice_jobs_pkey", []any{recent, 1001}},
		{"deleted", deleted, "sluice_jobs_pkey", []any{recent, 1001}},
		{"countRunning", countRunning, "sluice_jobs_lease_idx", []any{10001}},
		{"countCreated", countCreated, "sluice_jobs_pkey", []any{lo, hi, 1001}},
		{"countFinalized", countFinalized, "Index Only Scan using sluice_jobs_finalized_idx", []any{recent, 1001}},
		{"countActs", countActs, "", []any{recent, 1001}},
	} {
		modes := []string{"force_custom_plan", "force_generic_plan"}
		if tc.name == "series" {
			// An aggregate over a window: a generic plan cannot know the
			// window is recent and expects a third of the table, as it
			// does for the window's other figures. Postgres keeps custom
			// plans for a statement whose generic plan costs more than
			// they do, as this one's does, many times over.
			modes = modes[:1]
		}
		for _, mode := range modes {
			plan := explainMode(tb, pool, mode, "EXPLAIN", tc.sql, tc.args...)
			require.NotRegexp(tb, `Seq Scan on sluice_jobs\s`, plan, "%s (%s) plan:\n%s", tc.name, mode, plan)
			require.Contains(tb, plan, tc.index, "%s (%s) plan:\n%s", tc.name, mode, plan)
		}
	}
}
