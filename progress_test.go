package sluice_test

import (
	"context"
	"database/sql"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

// badProgress are arguments ReportProgress refuses.
var badProgress = []struct {
	percent float64
	message string
}{
	{-0.1, ""}, {100.1, ""}, {math.NaN(), ""}, {math.Inf(1), ""},
	{50, strings.Repeat("x", sluice.MaxProgressMessageBytes+1)},
	{50, "nul \x00 inside"}, {50, "not utf-8 \xff"},
}

func TestReportProgressIsStoredAtABoundedRate(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testReportProgressIsStoredAtABoundedRate[*sql.Tx], testReportProgressIsStoredAtABoundedRate[pgx.Tx])
}

func testReportProgressIsStoredAtABoundedRate[TTx any](t *testing.T, k *kit[TTx]) {
	const interval = 50 * time.Millisecond
	reported, badDone, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	badErrs := make(chan error, 10)
	c := k.client(t, &sluice.Config{
		ProgressInterval: interval,
		Workers: workers(func(ctx context.Context, job *sluice.Job[noteArgs]) error {
			for i := range 1000 {
				if err := sluice.ReportProgress(ctx, float64(i)/10, "step "+strings.Repeat("i", i%3)); err != nil {
					return err
				}
			}
			close(reported)
			<-badDone
			for _, bad := range badProgress {
				badErrs <- sluice.ReportProgress(ctx, bad.percent, bad.message)
			}
			close(badErrs)
			<-release
			return nil
		}),
	})
	events := c.Subscribe(sluice.EventProgressed)
	defer events.Close()
	res, err := c.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	<-reported
	start := time.Now()

	// The last report reaches the database; the reports before it cost
	// nothing but a store in memory: at most one write per interval.
	var (
		ev sluice.Event
		n  int
	)
	for ev.Job == nil || ev.Job.Progress.Percent != 99.9 {
		ev = next(t, events)
		n++
	}
	require.LessOrEqual(t, n, int(time.Since(start)/interval)+2, "progress events, one per write")
	require.Equal(t, res.Job.ID, ev.Job.ID)
	require.Equal(t, "step ", ev.Job.Progress.Message)
	require.Equal(t, 1, ev.Job.Progress.Attempt)
	require.GreaterOrEqual(t, ev.Duration, time.Duration(0))
	row, err := c.Get(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, sluice.StatusProcessing, row.Status)
	require.Equal(t, ev.Job.Progress, row.Progress, "Get shows what was stored")

	// Bad input is refused and records nothing.
	close(badDone)
	for err := range badErrs {
		require.ErrorIs(t, err, sluice.ErrInvalidProgress)
		var pe *sluice.ProgressError
		require.ErrorAs(t, err, &pe)
		require.Contains(t, []string{"percent", "message"}, pe.Field)
	}
	select {
	case ev := <-events.C:
		t.Fatalf("refused progress was written: %+v", ev.Job.Progress)
	case <-time.After(3 * interval):
	}

	// The progress is kept after the job ends, and listed.
	close(release)
	done := waitFor(t, c, res.Job.ID, sluice.StatusCompleted)
	require.Equal(t, row.Progress, done.Progress)
	page, err := c.List(t.Context(), &sluice.ListFilter{})
	require.NoError(t, err)
	require.Len(t, page.Jobs, 1)
	require.Equal(t, row.Progress, page.Jobs[0].Progress)

	require.ErrorIs(t, sluice.ReportProgress(t.Context(), 1, ""), sluice.ErrNotJobContext)
}
