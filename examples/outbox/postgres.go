package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/pgxdriver"
)

// runPostgres runs the example on the Postgres server at url, in a fresh
// schema that it drops when done.
func runPostgres(ctx context.Context, url string) error {
	var b [4]byte
	_, _ = rand.Read(b[:])
	schema := "sluice_outbox_" + hex.EncodeToString(b[:])
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return err
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	defer pool.Exec(context.WithoutCancel(ctx), "DROP SCHEMA "+schema+" CASCADE")
	if _, err := pool.Exec(ctx, `CREATE TABLE orders (id bigserial PRIMARY KEY, item text NOT NULL);
		CREATE TABLE shipments (order_id bigint NOT NULL UNIQUE, job_id text NOT NULL)`); err != nil {
		return err
	}
	st := &store[pgx.Tx]{
		begin:    func(ctx context.Context) (pgx.Tx, error) { return pool.Begin(ctx) },
		commit:   func(ctx context.Context, tx pgx.Tx) error { return tx.Commit(ctx) },
		rollback: func(ctx context.Context, tx pgx.Tx) error { return tx.Rollback(ctx) },
		exec: func(ctx context.Context, tx pgx.Tx, query string, args ...any) error {
			_, err := tx.Exec(ctx, query, args...)
			return err
		},
		insertID: func(ctx context.Context, tx pgx.Tx, query string, args ...any) (id int64, err error) {
			err = tx.QueryRow(ctx, query, args...).Scan(&id)
			return id, err
		},
		counts: func(ctx context.Context, query string, dest ...*int) error {
			ptrs := make([]any, len(dest))
			for i, d := range dest {
				ptrs[i] = d
			}
			return pool.QueryRow(ctx, query).Scan(ptrs...)
		},
	}
	worker := &ShipWorker[pgx.Tx]{store: st}
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, worker)
	client, err := sluice.NewClient(pgxdriver.New(pool, pgxdriver.WithSchema(schema)), &sluice.Config{Workers: workers})
	if err != nil {
		return err
	}
	return run(ctx, st, client, worker)
}
