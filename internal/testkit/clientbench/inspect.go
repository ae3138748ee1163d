package clientbench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
)

// InspectRows is how many jobs the List and Stats benchmarks' table holds:
// a million, or 20,000 under SLUICE_BENCH_SMALL.
func InspectRows() int {
	if Small() {
		return 20_000
	}
	return 1_000_000
}

// InspectMix describes the table the List and Stats benchmarks fill, so
// that every driver fills it alike. Job i (from 0) of n is created
// (n-i)*InspectSpacing before the load, of topic "topic_<i%10>", in queue
// "q<i%3>"; by i%100 it is completed (below 90), failed (below 94),
// cancelled (95), pending (below 99) or processing. A finished job was
// claimed a second after its creation and finished i%1000 ms after that.
const InspectSpacing = 600 * time.Millisecond

// Inspect runs the List and Stats benchmarks on a client over d, whose table
// the caller filled as InspectMix says, and reports ms/op; then it fills
// the metrics store and runs the metrics page's queries over it.
func Inspect[TTx any](b *testing.B, d driver.Driver[TTx]) {
	b.Helper()
	c, err := sluice.NewClient(d, &sluice.Config{Logger: discard, SkipMigrations: true})
	if err != nil {
		b.Fatal(err)
	}
	lists := []struct {
		name string
		f    sluice.ListFilter
	}{
		{"List/Newest", sluice.ListFilter{Order: sluice.NewestFirst, Limit: 50}},
		{"List/Failed", sluice.ListFilter{JobFilter: sluice.JobFilter{Statuses: []sluice.JobStatus{sluice.StatusFailed}}, Order: sluice.NewestFirst, Limit: 50}},
		{"List/TopicPending", sluice.ListFilter{JobFilter: sluice.JobFilter{Topics: []string{"topic_5"}, Statuses: []sluice.JobStatus{sluice.StatusPending}}, Limit: 50}},
		// No pending job has topic 3: the worst case, a filter that
		// selects nothing, walked in ID order.
		{"List/NoMatch", sluice.ListFilter{JobFilter: sluice.JobFilter{Topics: []string{"topic_3"}, Statuses: []sluice.JobStatus{sluice.StatusPending}}, Limit: 50}},
		{"List/Offset10k", sluice.ListFilter{Order: sluice.NewestFirst, Offset: 10_000, Limit: 50}},
	}
	for _, l := range lists {
		b.Run(l.name, func(b *testing.B) {
			measure(b, func(ctx context.Context) error {
				_, err := c.List(ctx, &l.f)
				return err
			})
		})
	}
	b.Run("Stats/All", func(b *testing.B) {
		measure(b, func(ctx context.Context) error {
			_, err := c.Stats(ctx, nil)
			return err
		})
	})
	b.Run("Stats/Topic", func(b *testing.B) {
		measure(b, func(ctx context.Context) error {
			_, err := c.Stats(ctx, &sluice.StatsFilter{Topics: []string{"topic_3"}})
			return err
		})
	})
	inspectHTTP(b, c)
	metricsQueries(b, d, c)
	b.Run("Changes/Count", func(b *testing.B) { changesTick(b, d, true) })
	b.Run("Changes/Read", func(b *testing.B) { changesTick(b, d, false) })
}

// changesTick measures one read of a change feed with the default Config
// over the table: the running jobs, the last read's running jobs by ID,
// the jobs created, finished, requeued and deleted within the default
// lag; or, with count, the count the feed makes first.
func changesTick[TTx any](b *testing.B, d driver.Driver[TTx], count bool) {
	ex := d.Executor()
	limit := sluice.DefaultFeedMaxRows + 1
	res, err := ex.JobChanges(context.Background(), &driver.JobChangesParams{Running: true, Limit: limit})
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]string, len(res.Running))
	for i, s := range res.Running {
		ids[i] = s.ID
	}
	now := time.Now()
	p := &driver.JobChangesParams{Running: true, IDs: ids, Limit: limit,
		CreatedFrom:    idFloor(now.Add(-sluice.DefaultFeedLag - sluice.DefaultFeedInterval)),
		CreatedBefore:  idFloor(now.Add(sluice.DefaultFeedLag)),
		FinalizedSince: now.Add(-sluice.DefaultFeedLag - sluice.DefaultFeedInterval),
		ActedSince:     now.Add(-sluice.DefaultFeedLag - sluice.DefaultFeedInterval), CountOnly: count}
	measure(b, func(ctx context.Context) error {
		_, err := ex.JobChanges(ctx, p)
		return err
	})
	b.ReportMetric(float64(len(ids)), "running")
}

// idFloor returns the smallest UUID of t's millisecond (see the feed).
func idFloor(t time.Time) string {
	ms := t.UnixMilli()
	return fmt.Sprintf("%08x-%04x-0000-0000-000000000000", ms>>16, ms&0xffff)
}

func measure(b *testing.B, fn func(ctx context.Context) error) {
	ctx := context.Background()
	start := time.Now()
	for b.Loop() {
		if err := fn(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/op")
}
