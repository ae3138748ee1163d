package fanout

import (
	"fmt"
	"testing"
)

// BenchmarkPublishOneJobStreams publishes events of one job while n
// streams each watch another job, one of them this one: what an event
// costs does not grow with the streams that do not select it (a map
// lookup finds those that do).
func BenchmarkPublishOneJobStreams(b *testing.B) {
	for _, n := range []int{10, 1000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			// A buffer that never fills between the clears below; the
			// hub's shared log is as long, so not longer than that.
			h := newHub(1<<16, 4096)
			for i := range n {
				h.Join(Filter{IDs: []string{fmt.Sprint("job", i)}}, "")
			}
			watched := h.byID["job0"][0]
			ev := []*Event{{ID: "1", Job: "job0", Topic: "x", Frame: []byte("1;")}}
			for i := 0; b.Loop(); i++ {
				h.Publish(ev)
				if i%1000 == 0 {
					clear(watched.pending)
					watched.pending = watched.pending[:0]
				}
			}
		})
	}
}

// BenchmarkPublishUnfiltered publishes 100 events to n streams without
// a filter, in batches of 100 or one at a time (as a client's enqueues
// come), after which the streams' writers take them (as WriteTo does,
// without writing); it reports ns per event and stream.
func BenchmarkPublishUnfiltered(b *testing.B) {
	for _, n := range []int{1, 300} {
		for _, size := range []int{100, 1} {
			b.Run(fmt.Sprintf("streams=%d/batch=%d", n, size), func(b *testing.B) {
				h := newHub(1024, 4096)
				streams := make([]*Stream, n)
				for i := range streams {
					streams[i] = h.Join(Filter{}, "")
				}
				events := make([]*Event, 100)
				for i := range events {
					events[i] = change(i, "a", "x")
				}
				for b.Loop() {
					for i := 0; i < len(events); i += size {
						h.Publish(events[i : i+size])
					}
					for _, s := range streams {
						taken, _, _ := s.take()
						clear(taken)
						s.spare = taken[:0]
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(events)*n), "ns/event/stream")
			})
		}
	}
}
