package clientbench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
)

// FeedRunningLogs measures the part of a change feed's read that its
// JobState.Logged adds to: the running jobs, read through the lease index
// and by ID, while running jobs each keep records logs of about 250 bytes
// (100 records, the default bound, make about 30 KiB). It reports ms/op
// and the jobs read.
func FeedRunningLogs[TTx any](b *testing.B, d driver.Driver[TTx], running, records int) {
	ctx := context.Background()
	line := strings.Repeat("x", 200)
	logged, release := make(chan struct{}, running), make(chan struct{})
	c := clientWith(b, d, func(ctx context.Context, job *sluice.Job[Args]) error {
		for i := range records {
			sluice.Logger(ctx).Info(line, "i", i, "job", job.ID)
		}
		logged <- struct{}{}
		<-release
		return nil
	}, running, func(cfg *sluice.Config) { cfg.ProgressInterval = 10 * time.Millisecond })
	params := make([]sluice.EnqueueParams, running)
	for i := range params {
		params[i] = sluice.EnqueueParams{Args: Args{N: i}}
	}
	if _, err := c.EnqueueMany(ctx, params); err != nil {
		b.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer func() {
		close(release)
		_ = c.Stop(ctx)
	}()
	for range running {
		<-logged
	}
	ids := waitLogsStored(b, c, running, records)
	ex := d.Executor()
	p := &driver.JobChangesParams{Running: true, IDs: ids, Limit: sluice.DefaultFeedMaxRows + 1}
	measure(b, func(ctx context.Context) error {
		_, err := ex.JobChanges(ctx, p)
		return err
	})
	b.ReportMetric(float64(len(ids)), "running")
}

// waitLogsStored waits for running processing jobs to have records logs
// each stored, and returns their IDs.
func waitLogsStored[TTx any](b *testing.B, c *sluice.Client[TTx], running, records int) []string {
	f := &sluice.ListFilter{JobFilter: sluice.JobFilter{Statuses: []sluice.JobStatus{sluice.StatusProcessing}}, Limit: running}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		res, err := c.List(context.Background(), f)
		if err != nil {
			b.Fatal(err)
		}
		var ids []string
		for _, j := range res.Jobs {
			if len(j.Logs)+j.LogsDropped >= records {
				ids = append(ids, j.ID)
			}
		}
		if len(ids) == running {
			return ids
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d running jobs have their logs stored", len(ids), running)
		}
	}
}
