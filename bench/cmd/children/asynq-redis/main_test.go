package main

import (
	"testing"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/bench/internal/redisserver"
)

// TestSystem runs every measurement, tiny, for both systems, each
// measurement on a fresh Redis server with the system's persistence, as
// the comparison program runs them.
func TestSystem(t *testing.T) {
	t.Parallel()
	for system, p := range map[string]redisserver.Persistence{
		"asynq":     redisserver.AOF,
		"asynq-rdb": redisserver.Snapshot,
	} {
		t.Run(system, func(t *testing.T) {
			t.Parallel()
			fresh := func(spec *harness.Spec) (func(), error) {
				srv, err := redisserver.Start(t.Context(), p)
				if err != nil {
					return nil, err
				}
				spec.DB = srv.URL()
				return func() {
					if err := srv.Stop(); err != nil {
						t.Error(err)
					}
				}, nil
			}
			err := harness.Exercise(t.Context(), factories, harness.Spec{System: system, Driver: "pg"}, fresh)
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
