// Package pgpool opens the Postgres pool every system of the comparison
// works through, and runs the systems' own SQL on it. The child programs of
// the systems on Postgres share it.
package pgpool

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/bench/harness"
)

// Size is the number of connections every system's Postgres pool holds.
const Size = 20

// New opens a pool on spec's database whose connections resolve names in
// spec's schema. Each system is also told its schema through its own
// option, which keeps its LISTEN/NOTIFY channels apart from those of other
// programs using the same server.
func New(ctx context.Context, spec *harness.Spec) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(spec.DB)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = Size
	cfg.ConnConfig.RuntimeParams["search_path"] = spec.Schema
	return pgxpool.NewWithConfig(ctx, cfg)
}

// Exec returns a function that runs a statement on pool.
func Exec(pool *pgxpool.Pool) func(ctx context.Context, query string, args ...any) error {
	return func(ctx context.Context, query string, args ...any) error {
		_, err := pool.Exec(ctx, query, args...)
		return err
	}
}

// Count returns a function that runs a query of one number, such as a
// count(*), on pool.
func Count(pool *pgxpool.Pool) func(ctx context.Context, query string) (int64, error) {
	return func(ctx context.Context, query string) (int64, error) {
		var n int64
		err := pool.QueryRow(ctx, query).Scan(&n)
		return n, err
	}
}
