package sluice_test

import (
	"context"
	"database/sql"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

func TestClientsRecordThemselves(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testClientsRecordThemselves[*sql.Tx], testClientsRecordThemselves[pgx.Tx])
}

func testClientsRecordThemselves[TTx any](t *testing.T, k *kit[TTx]) {
	operator := k.client(t, nil)
	started := make(chan string, 1)
	c, err := sluice.NewClient(k.driver, &sluice.Config{
		Logger:            quiet,
		HeartbeatInterval: 10 * time.Millisecond,
		Queues:            map[string]sluice.QueueConfig{"default": {MaxWorkers: 2}, "idle": {}},
		Workers: workers(func(ctx context.Context, job *sluice.Job[noteArgs]) error {
			started <- job.LockedBy
			return nil
		}),
	})
	require.NoError(t, err)
	list := func() []*sluice.ClientInfo {
		infos, err := operator.Clients(t.Context())
		require.NoError(t, err)
		return infos
	}
	require.Empty(t, list(), "nothing recorded before Start")

	require.NoError(t, c.Start(t.Context()))
	res, err := c.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	lockedBy := <-started
	waitFor(t, c, res.Job.ID, sluice.StatusCompleted)

	infos := list()
	require.Len(t, infos, 1)
	info := infos[0]
	require.Equal(t, lockedBy, info.ID, "the record names the client as its jobs do")
	host, _ := os.Hostname()
	require.Equal(t, host, info.Host)
	require.Equal(t, os.Getpid(), info.PID)
	require.Equal(t, []string{"note"}, info.Topics)
	require.Equal(t, []string{"default"}, info.Queues, "queues it works, not those it only enqueues into")
	require.Equal(t, map[string]int{"default": 2}, info.MaxWorkers)
	require.Eventually(t, func() bool { return list()[0].SeenAt.After(info.SeenAt) }, 5*time.Second, 10*time.Millisecond,
		"refreshed at every heartbeat")
	require.Equal(t, info.StartedAt, list()[0].StartedAt)

	require.NoError(t, c.Stop(t.Context()))
	require.Empty(t, list(), "Stop deletes the record")
}
