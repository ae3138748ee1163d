package pgxdriver_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/clientbench"
)

func BenchmarkTmpLat(b *testing.B) {
	d, _ := benchDriver(b)
	started := make(chan time.Time, 1)
	c := clientbench.Client(b, d, func(context.Context, *sluice.Job[clientbench.Args]) error {
		started <- time.Now()
		return nil
	})
	ctx := context.Background()
	c.Start(ctx)
	var enq, rest []time.Duration
	for i := 0; i < 60; i++ {
		t0 := time.Now()
		c.Enqueue(ctx, clientbench.Args{N: i}, nil)
		t1 := time.Now()
		t2 := <-started
		enq = append(enq, t1.Sub(t0))
		rest = append(rest, t2.Sub(t1))
		time.Sleep(100 * time.Millisecond)
	}
	c.Stop(ctx)
	slices.Sort(enq)
	slices.Sort(rest)
	fmt.Println("enqueue p50", enq[30], "p90", enq[54], "; to start p50", rest[30], "p90", rest[54])
}
