// Package lease keeps the leases of running jobs alive (heartbeat) and takes
// back the jobs of clients that are gone (rescue).
package lease

import (
	"context"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/tick"
)

// Heartbeat, once per interval until ctx ends, asks held for the IDs of
// the jobs the client holds and extends their leases to lease from now, if
// they are still processing under clientID; when held returns none, it
// writes nothing. held must return every job the client runs or has an
// outcome of still to write, and no other: a job the client no longer knows
// it holds (its outcome given up on, or forgotten by a crashed server) is
// left to expire and be rescued. A failed extension is logged and tried
// again at the next beat.
func Heartbeat(ctx context.Context, exec driver.Executor, clientID string, held func() []string,
	interval, lease time.Duration, clock func() time.Time, logger *slog.Logger,
) {
	tick.Every(ctx, interval, func() {
		ids := held()
		if len(ids) == 0 {
			return
		}
		_, err := exec.JobHeartbeat(ctx, &driver.JobHeartbeatParams{
			ClientID:    clientID,
			IDs:         ids,
			LockedUntil: clock().Add(lease),
		})
		if err != nil && ctx.Err() == nil {
			logger.Warn("sluice: heartbeat failed; leases may expire", "error", err)
		}
	})
}

// rescueLimit is the most jobs rescued in one call; more wait for the next
// round, which follows at once.
const rescueLimit = 1000

// Rescue takes back jobs whose leases expired, at once and then once per
// interval until ctx ends, and calls rescued with each job it took back, as
// it is after the rescue: pending again, or failed.
func Rescue(ctx context.Context, exec driver.Executor, interval time.Duration,
	clock func() time.Time, logger *slog.Logger, rescued func(row *driver.JobRow),
) {
	tick.NowAndEvery(ctx, interval, func() {
		for ctx.Err() == nil {
			now := clock()
			rows, err := exec.JobRescue(ctx, &driver.JobRescueParams{
				Now:   now,
				Error: driver.AttemptError{At: now, Error: "lease expired"},
				Limit: rescueLimit,
			})
			if err != nil {
				if ctx.Err() == nil {
					logger.Warn("sluice: rescuing expired jobs failed", "error", err)
				}
				return
			}
			for _, row := range rows {
				logger.Info("sluice: rescued job whose lease expired",
					"job_id", row.ID, "topic", row.Topic, "attempt", row.Attempt, "status", row.Status)
				rescued(row)
			}
			if len(rows) < rescueLimit {
				return
			}
		}
	})
}
