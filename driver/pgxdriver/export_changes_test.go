package pgxdriver

import (
	"strings"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// ChangesQueries returns the SQL of JobChanges' parts, for tests that
// check their plans.
func (d *Driver) ChangesQueries() (running, byID, created, finalized, acted, deleted string) {
	fill := strings.NewReplacer("{t}", d.Table(), "{cols}", stateColumns, "{acts}", d.actsTable()).Replace
	return fill(changesRunningSQL), fill(changesByIDSQL), fill(changesCreatedSQL), fill(changesFinalizedSQL),
		fill(changesActedSQL), fill(changesDeletedSQL)
}

// SeriesQuery returns the SQL of Stats' outcomes per bucket and its
// arguments, for tests that check its plan.
func (d *Driver) SeriesQuery(filter *driver.JobFilter, since time.Time, bucket time.Duration) (string, []any) {
	return seriesSQL(d.Table(), windowQuery(filter, since), bucket)
}

// ChangesCountQueries returns the SQL that counts JobChanges' parts, for
// tests that check their plans.
func (d *Driver) ChangesCountQueries() (running, created, finalized, acts string) {
	fill := strings.NewReplacer("{t}", d.Table(), "{cols}", "1", "{acts}", d.actsTable()).Replace
	count := func(sql string) string { return "SELECT count(*) FROM (" + fill(sql) + ") AS c" }
	return count(changesRunningCountSQL), count(changesCreatedSQL), count(changesFinalizedSQL), count(changesActsCountSQL)
}
