package sluice

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/tick"
)

// ClientInfo is a started client as it records itself: its ID (the
// LockedBy of the jobs it holds), host, process ID, topics, queues and how
// many jobs of each queue it works at once, when it started and when it
// was last seen.
type ClientInfo = driver.ClientRow

// presenceExpiry is how long after a client was last seen its record is
// deleted by the other clients: it is gone.
const presenceExpiry = 10 * time.Minute

// Clients returns the clients recorded in the database, sorted by ID:
// every started client records itself at Start, refreshes its record at
// every HeartbeatInterval and deletes it at Stop. A record whose SeenAt is
// older than a few heartbeat intervals belongs to a process that died;
// such records are deleted ten minutes after they were last refreshed.
func (c *Client[TTx]) Clients(ctx context.Context) ([]*ClientInfo, error) {
	rows, err := c.exec.ClientList(ctx, &driver.ClientListParams{})
	if err != nil {
		return nil, fmt.Errorf("list clients: %w", err)
	}
	return rows, nil
}

// presence returns the record of the run's client, seen now.
func (c *Client[TTx]) presence(r *run) *driver.ClientRow {
	host, _ := os.Hostname()
	row := &driver.ClientRow{ID: r.lockedBy, Host: host, PID: os.Getpid(), Topics: c.topics, StartedAt: c.now(),
		MaxWorkers: make(map[string]int)}
	for name, q := range c.cfg.Queues {
		if q.MaxWorkers > 0 {
			row.Queues = append(row.Queues, name)
			row.MaxWorkers[name] = q.MaxWorkers
		}
	}
	slices.Sort(row.Queues)
	return row
}

// record stores row, seen now, and prunes the records of clients gone.
func (c *Client[TTx]) record(ctx context.Context, row *driver.ClientRow) {
	now := c.now()
	row.SeenAt = now
	err := c.exec.ClientRecord(ctx, &driver.ClientRecordParams{Client: *row, PruneBefore: now.Add(-presenceExpiry)})
	if err != nil && ctx.Err() == nil {
		c.cfg.Logger.Warn("sluice: recording this client failed", "error", err)
	}
}

// present refreshes row every HeartbeatInterval until ctx ends, and then
// deletes it. Start records it first, before any job is claimed.
func (c *Client[TTx]) present(ctx context.Context, row *driver.ClientRow) {
	tick.Every(ctx, c.cfg.HeartbeatInterval, func() { c.record(ctx, row) })
	forget, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := c.exec.ClientForget(forget, &driver.ClientForgetParams{ID: row.ID}); err != nil {
		c.cfg.Logger.Warn("sluice: deleting this client's record failed", "error", err)
	}
}
