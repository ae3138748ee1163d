// Command sluice-pg is sluice on Postgres for the comparison program, which
// builds it and runs it as a child process. It links sluice, pgxdriver and
// pgx and no other system or database library, so the memory the
// comparison reads from it is sluice's on Postgres alone.
package main

import (
	"context"
	"os"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/bench/internal/pgpool"
	"github.com/sluicehq/sluice/bench/internal/sluicesys"
	"github.com/sluicehq/sluice/driver/pgxdriver"
)

var factories = map[string]harness.Factory{"sluice/pg": newSystem}

func main() {
	harness.Exit(harness.ChildMain(context.Background(), os.Args[1:], os.Stdout, factories))
}

// tunedWorkers is sluice's worker count for throughput on Postgres, where
// every statement is a round trip and a commit, so larger batches pay off:
// 2,000 (River's own setting) worked a few percent more than 1,000 for
// half as much memory again, still well below River's (see the sweep in
// bench/README.md).
const tunedWorkers = 2000

// finishedInsert inserts $1 completed jobs.
const finishedInsert = `INSERT INTO sluice_jobs
	(id, topic, queue, payload, status, attempt, max_retries, run_at, created_at, attempted_at, finalized_at)
	SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, 'bench', 'default',
		jsonb_build_object('n', -g), 'completed', 1, 3, now(), now(), now(), now()
	FROM generate_series(1, $1::int) g`

func newSystem(ctx context.Context, spec *harness.Spec) (harness.System, error) {
	pool, err := pgpool.New(ctx, spec)
	if err != nil {
		return nil, err
	}
	return sluicesys.New(sluicesys.Setup[pgx.Tx]{
		Driver:         pgxdriver.New(pool, pgxdriver.WithSchema(spec.Schema)),
		TunedWorkers:   tunedWorkers,
		FinishedInsert: finishedInsert,
		Exec:           pgpool.Exec(pool),
		Count:          pgpool.Count(pool),
		Release:        pool.Close,
	}), nil
}
