// Package sluicesqlite sets sluice up on SQLite for the child programs that
// measure it, plain or with its observability features on, so that each of
// them works the same database the same way.
package sluicesqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/bench/internal/sluicesys"
	"github.com/sluicehq/sluice/bench/internal/sqldb"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// TunedWorkers is sluice's worker count for throughput on SQLite: each
// claim and each completion is one write transaction whatever its size, so
// larger batches pay off until memory grows faster than throughput (see the
// sweep in bench/README.md).
const TunedWorkers = 500

// finishedInsert inserts ? completed jobs, with times in microseconds since
// the epoch as sqlitedriver keeps them.
const finishedInsert = `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?)
	INSERT INTO sluice_jobs
	(id, topic, queue, payload, status, attempt, max_retries, run_at, created_at, attempted_at, finalized_at)
	SELECT printf('00000000-0000-7000-8000-%012x', n), 'bench', 'default', json_object('n', -n),
		'completed', 1, 3, t, t, t, t
	FROM g, (SELECT CAST(unixepoch('subsec') * 1000000 AS INTEGER) AS t)`

// Setup opens spec's SQLite file with sqlitedriver's settings, after
// checking that they are still the ones every system gets, and returns
// sluice's setup over it.
func Setup(_ context.Context, spec *harness.Spec) (sluicesys.Setup[*sql.Tx], error) {
	if got, want := sqlitedriver.DSN(spec.DB), harness.SQLiteDSN(spec.DB); got != want {
		return sluicesys.Setup[*sql.Tx]{}, fmt.Errorf("sqlitedriver.DSN differs from the settings every system gets:\n%s\n%s", got, want)
	}
	db, err := sqlitedriver.Open(spec.DB)
	if err != nil {
		return sluicesys.Setup[*sql.Tx]{}, err
	}
	return sluicesys.Setup[*sql.Tx]{
		Driver:         sqlitedriver.New(db),
		TunedWorkers:   TunedWorkers,
		FinishedInsert: finishedInsert,
		Exec:           sqldb.Exec(db),
		Count:          sqldb.Count(db),
		Release:        func() { _ = db.Close() },
	}, nil
}
