package sluice_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

func TestMetricsPerTopic(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testMetricsPerTopic[*sql.Tx], testMetricsPerTopic[pgx.Tx])
}

// testMetricsPerTopic works jobs of two topics, some failing, and reads
// what the client stored of them once it stopped (its last write).
func testMetricsPerTopic[TTx any](t *testing.T, k *kit[TTx]) {
	ctx := t.Context()
	ws := workers(func(_ context.Context, job *sluice.Job[noteArgs]) error {
		if job.Args.N%4 == 0 {
			return errors.New("every fourth fails")
		}
		return nil
	})
	sluice.AddRawWorker(ws, "slow", sluice.WorkFunc(func(context.Context, *sluice.Job[sluice.RawArgs]) error {
		time.Sleep(30 * time.Millisecond)
		return nil
	}))
	c, err := sluice.NewClient(k.driver, &sluice.Config{Workers: ws, Logger: quiet})
	require.NoError(t, err)
	var ids []string
	for n := range 8 {
		res, err := c.Enqueue(ctx, noteArgs{N: n}, &sluice.EnqueueOptions{MaxRetries: sluice.NoRetries})
		require.NoError(t, err)
		ids = append(ids, res.Job.ID)
	}
	res, err := c.Enqueue(ctx, sluice.RawArgs{TopicName: "slow", Payload: []byte(`{}`)}, nil)
	require.NoError(t, err)
	ids = append(ids, res.Job.ID)
	require.NoError(t, c.Start(ctx))
	for _, id := range ids {
		require.Eventually(t, func() bool {
			row, err := c.Get(ctx, id)
			return err == nil && row.Status.Finished()
		}, 10*time.Second, 10*time.Millisecond)
	}
	require.NoError(t, c.Stop(ctx)) // writes what it gathered

	m, err := c.Metrics(ctx, &sluice.MetricsFilter{Window: 30 * time.Minute, Bucket: 5 * time.Minute})
	require.NoError(t, err)
	require.Equal(t, 5*time.Minute, m.Bucket)
	require.Len(t, m.Topics, 2)
	note, slow := m.Topics[0], m.Topics[1]
	require.Equal(t, "note", note.Topic)
	require.Equal(t, int64(6), note.Completed)
	require.Equal(t, int64(2), note.Failed)
	require.InDelta(t, 0.25, note.FailureRate, 1e-9)
	require.GreaterOrEqual(t, len(note.Series), 6)
	var completed int64
	for _, b := range note.Series {
		completed += b.Completed
	}
	require.Equal(t, int64(6), completed)
	require.Equal(t, "slow", slow.Topic)
	require.Equal(t, int64(1), slow.Completed)
	require.GreaterOrEqual(t, slow.P50, 20*time.Millisecond, "within a bucket's ratio of 30 ms")
	require.LessOrEqual(t, slow.P50, slow.P99)

	only, err := c.Metrics(ctx, &sluice.MetricsFilter{Topics: []string{"slow"}})
	require.NoError(t, err)
	require.Len(t, only.Topics, 1)
	require.Len(t, only.Topics[0].Series, 60, "an hour by minute")

	for field, f := range map[string]*sluice.MetricsFilter{
		"Window": {Window: 90 * time.Second},
		"Bucket": {Bucket: 30 * time.Second},
	} {
		_, err := c.Metrics(ctx, f)
		var fe *sluice.FilterError
		require.ErrorAs(t, err, &fe)
		require.Equal(t, field, fe.Field)
	}
	_, err = c.Metrics(ctx, &sluice.MetricsFilter{Window: 30 * 24 * time.Hour})
	require.ErrorIs(t, err, sluice.ErrInvalidFilter, "longer than the store keeps")
}
