package pgxdriver

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/filtersql"
)

// Queries returns the driver's claim, heartbeat and rescue SQL, for tests
// that check their plans.
func (d *Driver) Queries() (claim, heartbeat, rescue string) {
	return d.q.claimBare, d.q.heartbeat, d.q.rescue
}

// WithVacuumPolicy sets when Maintain vacuums: it checks every interval
// and vacuums at minDead dead tuples and perLive of the live ones.
func WithVacuumPolicy(every time.Duration, minDead int64, perLive float64) Option {
	return func(d *Driver) {
		d.vacuum.every, d.vacuum.minDead, d.vacuum.perLive = every, minDead, perLive
	}
}

// WithAnalyzePolicy sets how long Maintain waits between two analyzes,
// and after one that left the estimate as far off.
func WithAnalyzePolicy(every, unfixed time.Duration) Option {
	return func(d *Driver) { d.vacuum.analyzeEvery, d.vacuum.analyzeUnfixed = every, unfixed }
}

// FlowClaimQuery returns the driver's claim SQL for a queue with a state
// (JobClaimParams.Flow), for tests that check its plan.
func (d *Driver) FlowClaimQuery() string { return d.q.claim }

// FinalizeQuery returns the driver's finalize SQL, for tests that check
// its plan.
func (d *Driver) FinalizeQuery() string { return d.q.finalize }

// CompleteQuery returns the driver's SQL for plain completions, for tests
// that check its plan.
func (d *Driver) CompleteQuery() string { return d.q.complete }

// CompleteDeleteQuery returns the driver's SQL for plain completions of
// jobs kept for no time, for tests that check its plan.
func (d *Driver) CompleteDeleteQuery() string { return d.q.completeDelete }

// CompleteLogsQuery returns the driver's SQL for plain completions with
// logs, for tests that check its plan.
func (d *Driver) CompleteLogsQuery() string { return d.q.completeLogs }

// ProgressQuery returns the driver's progress SQL, for tests that check its
// plan.
func (d *Driver) ProgressQuery() string { return d.q.progress }

// QueueLoadQueries returns the driver's queue load SQL, for tests that
// check their plans.
func (d *Driver) QueueLoadQueries() (running, ahead string) { return d.q.queueRunning, d.q.queueAhead }

// FinalizeInsertQuery returns the driver's SQL for finalizations that
// insert jobs, for tests that check its plan.
func (d *Driver) FinalizeInsertQuery() string { return d.q.finalizeIns }

// CountQuery returns the statement that counts the jobs f selects, as a
// list's total does for a filter the counts cannot answer, and its
// arguments, for tests that check its plan.
func (d *Driver) CountQuery(f *driver.JobFilter) (string, []any) {
	q := filtersql.New(dialect, f)
	return "SELECT count(*) FROM " + d.Table() + " " + q.Where(), q.Args
}

// AllJobsQuery returns a query of every job's columns, as a claim returns
// them, in ID order.
func (d *Driver) AllJobsQuery() string {
	return strings.Replace(d.q.get, "WHERE j.id = $1", "ORDER BY j.id", 1)
}

// ReadJobs runs sql on db and reads its rows as the driver reads a claim's:
// from their wire format where it can (wire), or through pgx's Scan
// alone. It returns how many rows were read from the wire format.
func ReadJobs(ctx context.Context, db *pgxpool.Pool, sql string, wire bool) ([]*driver.JobRow, int, error) {
	rows, err := db.Query(ctx, sql)
	if err != nil {
		return nil, 0, err
	}
	return readRows(rows, wire)
}

// ReadRows reads rows as ReadJobs does.
func ReadRows(rows pgx.Rows, wire bool) ([]*driver.JobRow, int, error) { return readRows(rows, wire) }
