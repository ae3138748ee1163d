// Command sluice-sqlite is sluice on SQLite for the comparison program,
// which builds it and runs it as a child process. It links sluice,
// sqlitedriver and modernc.org/sqlite and no other system or database
// library (pgx included), so the memory the comparison reads from it is
// sluice's on SQLite alone.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/bench/internal/sluicesys"
	"github.com/sluicehq/sluice/bench/internal/sqldb"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

var factories = map[string]harness.Factory{"sluice/sqlite": newSystem}

func main() {
	harness.Exit(harness.ChildMain(context.Background(), os.Args[1:], os.Stdout, factories))
}

// tunedWorkers is sluice's worker count for throughput on SQLite: each
// claim and each completion is one write transaction whatever its size, so
// larger batches pay off until memory grows faster than throughput (see the
// sweep in bench/README.md).
const tunedWorkers = 500

// finishedInsert inserts ? completed jobs, with times in microseconds since
// the epoch as sqlitedriver keeps them.
const finishedInsert = `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?)
	INSERT INTO sluice_jobs
	(id, topic, queue, payload, status, attempt, max_retries, run_at, created_at, attempted_at, finalized_at)
	SELECT printf('00000000-0000-7000-8000-%012x', n), 'bench', 'default', json_object('n', -n),
		'completed', 1, 3, t, t, t, t
	FROM g, (SELECT CAST(unixepoch('subsec') * 1000000 AS INTEGER) AS t)`

func newSystem(_ context.Context, spec *harness.Spec) (harness.System, error) {
	if got, want := sqlitedriver.DSN(spec.DB), harness.SQLiteDSN(spec.DB); got != want {
		return nil, fmt.Errorf("sqlitedriver.DSN differs from the settings every system gets:\n%s\n%s", got, want)
	}
	db, err := sqlitedriver.Open(spec.DB)
	if err != nil {
		return nil, err
	}
	return sluicesys.New(sluicesys.Setup[*sql.Tx]{
		Driver:         sqlitedriver.New(db),
		TunedWorkers:   tunedWorkers,
		FinishedInsert: finishedInsert,
		Exec:           sqldb.Exec(db),
		Count:          sqldb.Count(db),
		Release:        func() { _ = db.Close() },
	}), nil
}
