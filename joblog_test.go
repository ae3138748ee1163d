package sluice_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestLoggerKeepsRecordsWithTheJob(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testLoggerKeepsRecordsWithTheJob[*sql.Tx], testLoggerKeepsRecordsWithTheJob[pgx.Tx])
}

func testLoggerKeepsRecordsWithTheJob[TTx any](t *testing.T, k *kit[TTx]) {
	var out syncBuffer
	ws := workers(func(ctx context.Context, job *sluice.Job[noteArgs]) error {
		log := sluice.Logger(ctx).With("step", "copy").WithGroup("g")
		log.Info("hello \x00 there", "n", job.Args.N, "d", time.Second, "err", errors.New("bad"))
		log.Debug("not kept")
		if job.Attempt == 1 {
			sluice.Logger(ctx).Warn("failing")
			return errors.New("first attempt fails")
		}
		return nil
	})
	c := k.client(t, &sluice.Config{Workers: ws, RetryPolicy: quickRetry{},
		Logger: slog.New(slog.NewJSONHandler(&out, nil))})
	res, err := c.Enqueue(t.Context(), noteArgs{N: 7}, nil)
	require.NoError(t, err)
	row := waitFor(t, c, res.Job.ID, sluice.StatusCompleted)

	require.Len(t, row.Logs, 3, "%+v", row.Logs)
	require.Equal(t, 0, row.LogsDropped)
	first := row.Logs[0]
	require.Equal(t, 1, first.Attempt)
	require.Equal(t, slog.LevelInfo, first.Level)
	require.Equal(t, "hello \uFFFD there", first.Message)
	require.JSONEq(t, `{"step": "copy", "g": {"n": 7, "d": "1s", "err": "bad"}}`, string(first.Attrs))
	require.False(t, first.Time.IsZero())
	require.Equal(t, "failing", row.Logs[1].Message)
	require.Nil(t, row.Logs[1].Attrs)
	require.Equal(t, 2, row.Logs[2].Attempt, "the retry's record follows the first attempt's")

	// The records went to Config.Logger too, with the job's attributes
	// first, outside the logger's own attributes and groups.
	job := `"job_id":"` + res.Job.ID + `","topic":"` + res.Job.Topic + `","attempt":`
	require.Contains(t, out.String(), `"msg":"failing",`+job+`1}`)
	require.Contains(t, out.String(), `"msg":"hello \u0000 there",`+job+`1,"step":"copy","g":{"n":7,"d":1000000000,"err":"bad"}}`)
	require.Contains(t, out.String(), `"msg":"hello \u0000 there",`+job+`2,"step":"copy","g":{"n":7,`)
}

func TestLoggerBoundsAndWritesWhileRunning(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testLoggerBoundsAndWritesWhileRunning[*sql.Tx], testLoggerBoundsAndWritesWhileRunning[pgx.Tx])
}

func testLoggerBoundsAndWritesWhileRunning[TTx any](t *testing.T, k *kit[TTx]) {
	logged := make(chan struct{})
	release := make(chan struct{})
	ws := workers(func(ctx context.Context, job *sluice.Job[noteArgs]) error {
		for i := range 5 {
			sluice.Logger(ctx).Info("record", "i", i)
		}
		close(logged)
		<-release
		return nil
	})
	c := k.client(t, &sluice.Config{Workers: ws, ProgressInterval: 10 * time.Millisecond,
		JobLogs: sluice.JobLogConfig{MaxRecords: 3}})
	sub := c.Subscribe(sluice.EventLogged)
	defer sub.Close()
	res, err := c.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	<-logged
	// Written by the progress writer while the job runs.
	require.Eventually(t, func() bool {
		row, err := c.Get(t.Context(), res.Job.ID)
		require.NoError(t, err)
		return len(row.Logs) == 3
	}, 5*time.Second, 5*time.Millisecond)
	close(release)
	row := waitFor(t, c, res.Job.ID, sluice.StatusCompleted)
	require.Equal(t, 2, row.LogsDropped)
	require.JSONEq(t, `{"i": 2}`, string(row.Logs[0].Attrs), "the newest are kept")
	for i := range 5 {
		ev := <-sub.C
		require.Equal(t, sluice.EventLogged, ev.Kind)
		require.Equal(t, res.Job.ID, ev.Job.ID)
		require.Equal(t, "record", ev.Log.Message, "event %d", i)
	}
}

func TestLoggerOutsideAJob(t *testing.T) {
	t.Parallel()
	require.Equal(t, slog.Default(), sluice.Logger(context.Background()))
	onBothDrivers(t, testLoggerOutsideAJob[*sql.Tx], testLoggerOutsideAJob[pgx.Tx])
}

func testLoggerOutsideAJob[TTx any](t *testing.T, k *kit[TTx]) {
	var out syncBuffer
	logger := slog.New(slog.NewTextHandler(&out, nil))
	hooked := make(chan struct{})
	c := k.client(t, &sluice.Config{Workers: workers(func(context.Context, *sluice.Job[noteArgs]) error { return nil }),
		Logger: logger, Hooks: sluice.Hooks{ClientStarted: func(ctx context.Context, _ string) {
			sluice.Logger(ctx).Info("from a hook")
			close(hooked)
		}}})
	_ = c
	<-hooked
	require.True(t, strings.Contains(out.String(), "from a hook"))
}
