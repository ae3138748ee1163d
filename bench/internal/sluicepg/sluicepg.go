// Package sluicepg sets sluice up on Postgres for the child programs that
// measure it, plain or with its observability features on, so that each of
// them works the same database the same way.
package sluicepg

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/bench/internal/pgpool"
	"github.com/sluicehq/sluice/bench/internal/sluicesys"
	"github.com/sluicehq/sluice/driver/pgxdriver"
)

// TunedWorkers is sluice's worker count for throughput on Postgres, where
// every statement is a round trip and a commit, so larger batches pay off:
// 2,000 (River's own setting) worked a few percent more than 1,000 for
// half as much memory again, still well below River's (see the sweep in
// bench/README.md).
const TunedWorkers = 2000

// finishedInsert inserts $1 completed jobs.
const finishedInsert = `INSERT INTO sluice_jobs
	(id, topic, queue, payload, status, attempt, max_retries, run_at, created_at, attempted_at, finalized_at)
	SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, 'bench', 'default',
		jsonb_build_object('n', -g), 'completed', 1, 3, now(), now(), now(), now()
	FROM generate_series(1, $1::int) g`

// Setup opens a pool on spec's database and returns sluice's setup over it.
func Setup(ctx context.Context, spec *harness.Spec) (sluicesys.Setup[pgx.Tx], error) {
	pool, err := pgpool.New(ctx, spec)
	if err != nil {
		return sluicesys.Setup[pgx.Tx]{}, err
	}
	return sluicesys.Setup[pgx.Tx]{
		Driver:         pgxdriver.New(pool, pgxdriver.WithSchema(spec.Schema)),
		TunedWorkers:   TunedWorkers,
		FinishedInsert: finishedInsert,
		Exec:           pgpool.Exec(pool),
		Count:          pgpool.Count(pool),
		Release:        pool.Close,
	}, nil
}
