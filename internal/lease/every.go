package lease

import (
	"context"
	"time"
)

// Every calls fn once per interval until ctx ends, as the heartbeat and the
// rescuer do, for the client's other periodic checks.
func Every(ctx context.Context, interval time.Duration, fn func()) {
	every(ctx, interval, false, fn)
}
