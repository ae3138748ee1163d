// Package riverlogs turns on River's own way of keeping what a job logs
// with the job, the riverlog middleware, for the variants of River that
// log one line per job. It is a package of its own so that plain River's
// program does not link riverlog.
package riverlogs

import (
	"context"
	"io"
	"log/slog"

	"github.com/riverqueue/river/riverlog"

	"github.com/sluicehq/sluice/bench/internal/riverpg"
)

// Logged adds riverlog's middleware, writing JSON records as its
// documentation's example does, and makes every job log one line through
// riverlog.Logger, which the middleware stores in the job's metadata when
// the job ends: what sluice does with a record logged through
// sluice.Logger.
func Logged(e *riverpg.Extras) error {
	e.Middleware = append(e.Middleware, riverlog.NewMiddleware(func(w io.Writer) slog.Handler {
		return slog.NewJSONHandler(w, nil)
	}, nil))
	e.Log = func(ctx context.Context, n int64) {
		riverlog.Logger(ctx).Info("worked", "n", n)
	}
	return nil
}
