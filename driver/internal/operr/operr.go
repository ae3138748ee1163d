// Package operr builds the errors the drivers' operations return.
package operr

import (
	"context"
	"errors"
	"fmt"
)

// Wrap prefixes err with the driver's name and the operation, as in
// "sqlitedriver: claim: ...", and returns nil for a nil err. If ctx has
// ended, the result also matches ctx's error, whatever the database or its
// client reported instead (an interrupted statement, a transaction already
// rolled back, a closed connection).
func Wrap(ctx context.Context, driver, op string, err error) error {
	if err == nil {
		return nil
	}
	return wrap(ctx, driver, op, err)
}

// wrap is Wrap for a non-nil err, apart so that Wrap's test for nil is
// inlined into its callers.
func wrap(ctx context.Context, driver, op string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("%s: %s: %w: %w", driver, op, ctxErr, err)
	}
	return fmt.Errorf("%s: %s: %w", driver, op, err)
}
