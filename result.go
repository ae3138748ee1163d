package sluice

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sluicehq/sluice/driver"
)

// jobRunKey is the context key under which a job's context carries its
// run.
type jobRunKey struct{}

// SetResult stores result, encoded as JSON at once, as the result of the
// job whose context ctx is, if the worker then returns nil: the job
// completes with it (see JobRow.Result). A later call replaces an earlier
// one; a worker that returns an error, snoozes or cancels stores none. To
// complete a job with its result inside a transaction, use
// Client.AckWithResult instead. A result that does not encode, or holds a
// NUL character, returns an error matching ErrInvalidArgs; a context that
// is not a job's, ErrNotJobContext.
func SetResult(ctx context.Context, result any) error {
	jr, _ := ctx.Value(jobRunKey{}).(*jobRun)
	if jr == nil {
		return fmt.Errorf("set result: %w", ErrNotJobContext)
	}
	encoded, err := json.Marshal(result)
	if err == nil {
		err = driver.CheckJSON(encoded)
	}
	if err != nil {
		return fmt.Errorf("set result: %w", &ArgsError{Topic: jr.row.Topic, Err: err})
	}
	jr.result.Store(&encoded)
	return nil
}
