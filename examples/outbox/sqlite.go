package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// runSQLite runs the example on a SQLite file in a temporary directory.
func runSQLite(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "sluice-outbox-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	db, err := sqlitedriver.Open(filepath.Join(dir, "shop.db"))
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT NOT NULL);
		CREATE TABLE shipments (order_id INTEGER NOT NULL UNIQUE, job_id TEXT NOT NULL)`); err != nil {
		return err
	}
	st := &store[*sql.Tx]{
		begin:    func(ctx context.Context) (*sql.Tx, error) { return db.BeginTx(ctx, nil) },
		commit:   func(_ context.Context, tx *sql.Tx) error { return tx.Commit() },
		rollback: func(_ context.Context, tx *sql.Tx) error { return tx.Rollback() },
		exec: func(ctx context.Context, tx *sql.Tx, query string, args ...any) error {
			_, err := tx.ExecContext(ctx, query, args...)
			return err
		},
		insertID: func(ctx context.Context, tx *sql.Tx, query string, args ...any) (id int64, err error) {
			err = tx.QueryRowContext(ctx, query, args...).Scan(&id)
			return id, err
		},
		counts: func(ctx context.Context, query string, dest ...*int) error {
			ptrs := make([]any, len(dest))
			for i, d := range dest {
				ptrs[i] = d
			}
			return db.QueryRowContext(ctx, query).Scan(ptrs...)
		},
	}
	worker := &ShipWorker[*sql.Tx]{store: st}
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, worker)
	client, err := sluice.NewClient(sqlitedriver.New(db), &sluice.Config{Workers: workers})
	if err != nil {
		return err
	}
	return run(ctx, st, client, worker)
}
