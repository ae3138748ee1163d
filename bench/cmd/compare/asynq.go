package main

import (
	"context"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/bench/internal/redisserver"
)

// asynqSystems are asynq on Redis, reported in the Postgres tables against
// the queues on Postgres, with the Redis persistence each runs on: the
// append-only file fsynced every second, what a user who must not lose
// jobs runs (asynq), and Redis's default snapshots alone (asynq-rdb).
// Both run in the child program asynqProgram, each measurement on a fresh
// redis-server of its own.
var asynqSystems = map[string]redisserver.Persistence{
	"asynq":     redisserver.AOF,
	"asynq-rdb": redisserver.Snapshot,
}

// asynqProgram is the child program of asynqSystems.
const asynqProgram = "asynq-redis"

// startRedis starts the fresh Redis server with persistence p that one
// measurement works on, points spec at it, and returns the function that
// stops it and removes its files.
func (r *runner) startRedis(ctx context.Context, p redisserver.Persistence, spec *harness.Spec) (func(), error) {
	srv, err := redisserver.Start(ctx, p)
	if err != nil {
		return nil, err
	}
	spec.DB = srv.URL()
	return func() {
		if err := srv.Stop(); err != nil {
			r.logf("%v", err)
		}
	}, nil
}
