// Package sqldb runs the systems' own SQL through database/sql. The child
// programs of the systems on SQLite share it; it imports no SQL driver.
package sqldb

import (
	"context"
	"database/sql"
)

// Exec returns a function that runs a statement on db.
func Exec(db *sql.DB) func(ctx context.Context, query string, args ...any) error {
	return func(ctx context.Context, query string, args ...any) error {
		_, err := db.ExecContext(ctx, query, args...)
		return err
	}
}

// Count returns a function that runs a query of one number, such as a
// count(*), on db.
func Count(db *sql.DB) func(ctx context.Context, query string) (int64, error) {
	return func(ctx context.Context, query string) (int64, error) {
		var n int64
		err := db.QueryRowContext(ctx, query).Scan(&n)
		return n, err
	}
}
