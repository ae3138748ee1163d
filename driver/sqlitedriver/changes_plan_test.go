package sqlitedriver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/filtersql"
)

// TestChangesPlans checks that every read of a change feed's tick, and the
// outcomes per bucket of Stats, find their rows through the index their
// part names, on a table mostly finished whose statistics say so: none
// reads the whole table, so their cost grows with what they return.
func TestChangesPlans(t *testing.T) {
	t.Parallel()
	d := newPlanDriver(t)
	fillForPlans(t, d)
	_, err := d.db.ExecContext(t.Context(), "ANALYZE")
	require.NoError(t, err)
	d.CheckChangesPlans(t, time.Unix(1_900_000_000, 0).Add(time.Hour))
}

// CheckChangesPlans checks the plans of a change feed's reads and of the
// outcomes per bucket of Stats over d's table, with recent meaning after
// recent. BenchmarkInspect runs it on a million jobs.
func (d *Driver) CheckChangesPlans(tb testing.TB, recent time.Time) {
	fill := d.changesReplacer().Replace
	win := filtersql.New(d.dialect, &driver.JobFilter{})
	win.In("status", []string{"completed", "failed"})
	win.AddTime("finalized_at >= ", recent)
	series, seriesArgs := seriesSQL(d.sqlTable(), win, time.Minute)
	count := func(query string) string {
		return "SELECT count(*) FROM (" + d.changesReplacer("1").Replace(query) + ")"
	}
	for _, tc := range []struct {
		name, query string
		args        []any
		index       string
	}{
		{"running", fill(changesRunningSQL), []any{10001}, "sluice_jobs_lease_idx"},
		{"byID", fill(changesByIDSQL), []any{`["job-00001", "job-00002"]`}, "sqlite_autoindex_sluice_jobs_1"},
		{"created", fill(changesCreatedSQL), []any{"job-00100", "job-00200", 1001}, "sqlite_autoindex_sluice_jobs_1"},
		{"finalized", fill(changesFinalizedSQL), []any{micros(recent), 1001}, "sluice_jobs_finalized_idx"},
		{"series", series, seriesArgs, "sluice_jobs_finalized_idx"},
		{"acted", fill(changesActedSQL), []any{micros(recent), 1001}, "sluice_jobs_acts_idx"},
		{"deleted", fill(changesDeletedSQL), []any{micros(recent), 1001}, "sluice_jobs_acts_idx"},
		{"pruneActs", d.actQueries()[1], []any{micros(recent)}, "sluice_jobs_acts_idx"},
		{"countRunning", count(changesRunningSQL), []any{10001}, "sluice_jobs_lease_idx"},
		{"countCreated", count(changesCreatedSQL), []any{"job-00100", "job-00200", 1001}, "sqlite_autoindex_sluice_jobs_1"},
		{"countFinalized", count(changesFinalizedSQL), []any{micros(recent), 1001}, "COVERING INDEX sluice_jobs_finalized_idx"},
		{"countActs", count(changesActsCountSQL), []any{micros(recent), 1001}, "sluice_jobs_acts_idx"},
	} {
		requireIndexed(tb, d, tc.name, tc.query, tc.args, tc.index)
	}
}
