package fanout

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestMain fails the run if any test leaves a goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newHub returns a hub whose events' frames are "<ID or job>;" and whose
// reset frames are "reset@<id>;".
func newHub(buffer, history int) *Hub {
	return New(Config{Buffer: buffer, History: history, Reset: func(id string) []byte { return []byte("reset@" + id + ";") }})
}

// change returns event n of the sequence, of job in topic.
func change(n int, job, topic string) *Event {
	id := fmt.Sprint(n)
	return &Event{ID: id, Job: job, Topic: topic, Frame: []byte(id + ";")}
}

// live returns an event outside the sequence, of job in topic.
func live(job, topic string) *Event {
	return &Event{Job: job, Topic: topic, Frame: []byte("log:" + job + ";")}
}

// drain returns what s's writer writes now, as its frames.
func drain(t *testing.T, s *Stream) []string {
	t.Helper()
	var b bytes.Buffer
	_, err := s.WriteTo(&b)
	require.NoError(t, err)
	return frames(b.String())
}

func frames(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ';' })
}

func TestStreamsReceiveWhatTheirFilterSelectsInOrder(t *testing.T) {
	t.Parallel()
	h := newHub(100, 100)
	streams := map[string]*Stream{
		"all":            h.Join(Filter{}, ""),
		"job a":          h.Join(Filter{IDs: []string{"a"}}, ""),
		"jobs a, c":      h.Join(Filter{IDs: []string{"a", "c", "a"}}, ""),
		"topic x":        h.Join(Filter{Topics: []string{"x"}}, ""),
		"jobs b, c in y": h.Join(Filter{IDs: []string{"b", "c"}, Topics: []string{"y"}}, ""),
	}
	h.Publish([]*Event{change(1, "a", "x"), change(2, "b", "y"), live("c", "y")})
	h.Publish([]*Event{{ID: "3", Frame: []byte("resync3;")}, change(4, "c", "x"), live("a", "x")})
	want := map[string][]string{
		"all":            {"1", "2", "log:c", "resync3", "4", "log:a"},
		"job a":          {"1", "resync3", "log:a"},
		"jobs a, c":      {"1", "log:c", "resync3", "4", "log:a"},
		"topic x":        {"1", "resync3", "4", "log:a"},
		"jobs b, c in y": {"2", "log:c", "resync3"},
	}
	for name, s := range streams {
		select {
		case <-s.Ready():
		default:
			require.Fail(t, "events are waiting but the stream is not ready", name)
		}
		require.Equal(t, want[name], drain(t, s), name)
		require.Empty(t, drain(t, s), name)
	}
	select {
	case <-streams["all"].Ready():
		require.Fail(t, "a stream without a filter that has written everything is not ready")
	default:
	}
	require.Equal(t, "4", h.Last())

	for _, s := range streams {
		h.Leave(s)
		h.Leave(s)
	}
	h.Publish([]*Event{change(5, "a", "x")})
	for name, s := range streams {
		require.Empty(t, drain(t, s), "%s left", name)
	}
	require.Empty(t, h.all)
	require.Empty(t, h.filtered)
	require.Empty(t, h.byID)
	require.Empty(t, h.byTopic)
}

func TestOneJobStreamsEachReceiveTheirJobsEvents(t *testing.T) {
	t.Parallel()
	const jobs = 1000
	h := newHub(10, 4096)
	streams := make([]*Stream, jobs)
	for i := range streams {
		streams[i] = h.Join(Filter{IDs: []string{fmt.Sprint("job", i)}}, "")
	}
	n := 0
	for round := range 3 {
		batch := make([]*Event, 0, jobs)
		for i := range jobs {
			n++
			batch = append(batch, &Event{ID: fmt.Sprint(n), Job: fmt.Sprint("job", i), Frame: fmt.Appendf(nil, "%d.%d;", i, round)})
		}
		h.Publish(batch)
	}
	for i, s := range streams {
		require.Equal(t, []string{fmt.Sprint(i, ".0"), fmt.Sprint(i, ".1"), fmt.Sprint(i, ".2")}, drain(t, s), "job %d", i)
	}
}

func TestAStreamThatFallsBehindIsResetAndSlowsNobody(t *testing.T) {
	t.Parallel()
	h := newHub(4, 100)
	slow := h.Join(Filter{}, "")
	fast := h.Join(Filter{}, "")
	oneJob := h.Join(Filter{IDs: []string{"a"}}, "")

	// The slow stream's writer takes event 1 and is stuck writing it, its
	// reader reading nothing; the hub goes on publishing.
	h.Publish([]*Event{change(1, "a", "x")})
	stuck := &stuckWriter{entered: make(chan string, 1), release: make(chan struct{})}
	var writers sync.WaitGroup
	writers.Go(func() {
		<-slow.Ready()
		_, _ = slow.WriteTo(stuck)
	})
	require.Equal(t, "1;", <-stuck.entered)

	got := drain(t, fast)
	for n := 2; n <= 11; n++ {
		h.Publish([]*Event{change(n, "b", "x")})
		got = append(got, drain(t, fast)...) // a reader that keeps up
	}
	require.Equal(t, []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"}, got, "nothing lost or reordered")
	require.Equal(t, []string{"1"}, drain(t, oneJob))

	// The slow stream may be 4 events behind, and is 11 behind when its
	// writer comes back: what it missed is dropped, and its reset carries
	// the latest event's position. After it comes what is published next.
	h.Publish([]*Event{change(12, "a", "x")})
	close(stuck.release)
	writers.Wait()
	require.Equal(t, []string{"reset@12"}, drain(t, slow))
	h.Publish([]*Event{change(13, "a", "x")})
	require.Equal(t, []string{"13"}, drain(t, slow))
	require.Equal(t, []string{"12", "13"}, drain(t, fast))
	require.Equal(t, []string{"12", "13"}, drain(t, oneJob))
	require.Equal(t, uint64(1), h.Resets())
}

// stuckWriter's Write sends what it is given to entered, then waits for
// release.
type stuckWriter struct {
	entered chan string
	release chan struct{}
}

func (w *stuckWriter) Write(p []byte) (int, error) {
	w.entered <- string(p)
	<-w.release
	return len(p), nil
}

func TestResetCarriesThePositionOfWhatWasDropped(t *testing.T) {
	t.Parallel()
	h := newHub(2, 100)
	s := h.Join(Filter{IDs: []string{"a"}}, "")
	// Events 2 and 4 are of other jobs: the reset is at the sequence's
	// latest event when a's overflowed, a log with no ID of its own.
	h.Publish([]*Event{change(1, "a", "x"), change(2, "b", "x"), live("a", "x"), change(4, "b", "x"), live("a", "x"), change(6, "a", "x")})
	require.Equal(t, []string{"reset@4", "6"}, drain(t, s))
}

func TestStreamsWithoutAFilterReadTheLogAcrossItsEnd(t *testing.T) {
	t.Parallel()
	h := newHub(4, 100)
	s := h.Join(Filter{}, "")
	n := 0
	for _, batch := range []int{3, 3, 4, 1, 2} {
		var want []string
		for range batch {
			n++
			h.Publish([]*Event{change(n, "a", "x")})
			want = append(want, fmt.Sprint(n))
		}
		require.Equal(t, want, drain(t, s), "after event %d", n)
	}
	h.Publish([]*Event{change(14, "a", "x"), change(15, "a", "x"), change(16, "a", "x"), change(17, "a", "x"),
		change(18, "a", "x")})
	require.Equal(t, []string{"reset@18"}, drain(t, s), "five behind, four kept: a reset")
}

func TestAnEventIsEncodedOnceAndOnlyIfAStreamWritesIt(t *testing.T) {
	t.Parallel()
	h := newHub(100, 100)
	var streams []*Stream
	for range 8 {
		streams = append(streams, h.Join(Filter{IDs: []string{"a"}}, ""))
	}
	var calls [2]atomic.Int32
	lazy := func(i int, job string) *Event {
		return &Event{ID: fmt.Sprint(i + 1), Job: job, Topic: "x", Encode: func() []byte {
			calls[i].Add(1)
			return []byte(job + ";")
		}}
	}
	h.Publish([]*Event{lazy(0, "a"), lazy(1, "b")})
	var wg sync.WaitGroup
	for _, s := range streams {
		wg.Go(func() { require.Equal(t, []string{"a"}, drain(t, s)) })
	}
	wg.Wait()
	require.Equal(t, int32(1), calls[0].Load(), "eight streams wrote it: encoded once")
	require.Zero(t, calls[1].Load(), "no stream selects it: never encoded")

	// A stream that joins later and replays it writes the same frame.
	late := h.Join(Filter{}, "0")
	require.Equal(t, []string{"reset@2"}, drain(t, late), "0 was never kept: a reset")
	again := h.Join(Filter{IDs: []string{"b"}}, "1")
	require.Equal(t, []string{"b"}, drain(t, again))
	require.Equal(t, int32(1), calls[1].Load())
}

func TestAStreamOverItsRateWritesAResetInstead(t *testing.T) {
	t.Parallel()
	now := time.Unix(1e9, 0)
	h := New(Config{Buffer: 4, History: 100, Rate: 10, Now: func() time.Time { return now },
		Reset: func(id string) []byte { return []byte("reset@" + id + ";") }})
	s := h.Join(Filter{}, "")
	publish := func(ns ...int) {
		for _, n := range ns {
			h.Publish([]*Event{change(n, "a", "x")})
		}
	}
	// A burst as large as the buffer goes at once; then 10 a second.
	publish(1, 2, 3, 4)
	require.Equal(t, []string{"1", "2", "3", "4"}, drain(t, s))
	publish(5)
	require.Equal(t, []string{"reset@5"}, drain(t, s), "none left this second")
	now = now.Add(100 * time.Millisecond)
	publish(6)
	require.Equal(t, []string{"6"}, drain(t, s))
	now = now.Add(100 * time.Millisecond)
	publish(7, 8)
	require.Equal(t, []string{"reset@8"}, drain(t, s), "one allowed, two waiting: neither goes")
	now = now.Add(time.Second)
	publish(9)
	h.Publish([]*Event{live("a", "x")})
	publish(10)
	require.Equal(t, []string{"9", "log:a", "10"}, drain(t, s), "the allowance refilled, to the buffer at most")
	require.Equal(t, uint64(2), h.Resets())

	// A rate below the buffer allows bursts of a second's worth.
	slow := New(Config{Buffer: 100, History: 100, Rate: 3, Now: func() time.Time { return now },
		Reset: func(id string) []byte { return []byte("reset@" + id + ";") }})
	st := slow.Join(Filter{}, "")
	for n := range 4 {
		slow.Publish([]*Event{change(20+n, "a", "x")})
	}
	require.Equal(t, []string{"reset@23"}, drain(t, st), "four at once, three a second")
	slow.Publish([]*Event{change(24, "a", "x")})
	require.Equal(t, []string{"24"}, drain(t, st))
	now = now.Add(time.Hour)
	for n := range 3 {
		slow.Publish([]*Event{change(25+n, "a", "x")})
	}
	require.Equal(t, []string{"25", "26", "27"}, drain(t, st), "refilled to three, not more")
	slow.Publish([]*Event{change(28, "a", "x")})
	require.Equal(t, []string{"reset@28"}, drain(t, st))

	// Without a rate, a stream writes whatever its buffer holds.
	unlimited := newHub(4, 100)
	u := unlimited.Join(Filter{}, "")
	for round := range 3 {
		for n := range 4 {
			unlimited.Publish([]*Event{change(4*round+n, "a", "x")})
		}
		require.Len(t, drain(t, u), 4)
	}
}

func TestWriteToCoalescesEventsIntoFewWrites(t *testing.T) {
	t.Parallel()
	h := newHub(10_000, 1)
	s := h.Join(Filter{}, "")
	small := make([]*Event, 100)
	for i := range small {
		small[i] = change(i+1, "a", "x")
	}
	h.Publish(small)
	var rec writeRecorder
	_, err := s.WriteTo(&rec)
	require.NoError(t, err)
	require.Len(t, rec.writes, 1, "100 small events, one write")
	require.Len(t, frames(rec.writes[0]), 100)

	// 300 events of 1 KiB: 300 KiB in writes of at most 64 KiB, each
	// ending with a whole event; and one event larger than 64 KiB.
	big := make([]*Event, 300)
	for i := range big {
		big[i] = &Event{ID: fmt.Sprint(i), Frame: append(bytes.Repeat([]byte("x"), 1023), ';')}
	}
	huge := &Event{ID: "huge", Frame: append(bytes.Repeat([]byte("y"), 100<<10), ';')}
	h.Publish(append(big, huge))
	rec = writeRecorder{}
	n, err := s.WriteTo(&rec)
	require.NoError(t, err)
	require.Equal(t, int64(300<<10+100<<10+1), n)
	require.Len(t, rec.writes, 6, "5 writes of 64 KiB or less, and the large event")
	for _, w := range rec.writes[:5] {
		require.LessOrEqual(t, len(w), chunk)
		require.Equal(t, 0, len(w)%1024, "whole events only")
	}
	require.Len(t, rec.writes[5], 100<<10+1)
}

// writeRecorder records each write.
type writeRecorder struct{ writes []string }

func (r *writeRecorder) Write(p []byte) (int, error) {
	r.writes = append(r.writes, string(p))
	return len(p), nil
}

func TestJoinAfterAnEventReplaysWhatWasMissed(t *testing.T) {
	t.Parallel()
	h := newHub(100, 5)
	for n := 1; n <= 8; n++ {
		job := "a"
		if n%2 == 0 {
			job = "b"
		}
		h.Publish([]*Event{change(n, job, "x"), live(job, "x")})
	}
	// The hub keeps events 4 to 8.
	for _, tc := range []struct {
		name, after string
		filter      Filter
		want        []string
	}{
		{"the latest", "8", Filter{}, nil},
		{"kept", "5", Filter{}, []string{"6", "7", "8"}},
		{"kept, filtered", "4", Filter{IDs: []string{"a"}}, []string{"5", "7"}},
		{"the oldest kept", "4", Filter{}, []string{"5", "6", "7", "8"}},
		{"no longer kept", "3", Filter{}, []string{"reset@8"}},
		{"never seen", "nope", Filter{Topics: []string{"x"}}, []string{"reset@8"}},
		{"none", "", Filter{}, nil},
	} {
		s := h.Join(tc.filter, tc.after)
		if got := drain(t, s); len(tc.want) == 0 {
			require.Empty(t, got, tc.name)
		} else {
			require.Equal(t, tc.want, got, tc.name)
		}
		h.Leave(s)
	}
}

func TestRestartForgetsTheHistoryAndResetsTheStreams(t *testing.T) {
	t.Parallel()
	h := newHub(100, 10)
	h.Publish([]*Event{change(1, "a", "x"), change(2, "a", "x")})
	joined := h.Join(Filter{IDs: []string{"a"}}, "")
	h.Restart("r-7")
	require.Equal(t, "r-7", h.Last())
	h.Publish([]*Event{change(8, "a", "x")})
	require.Equal(t, []string{"reset@r-7", "8"}, drain(t, joined))
	require.Equal(t, []string{"reset@8"}, drain(t, h.Join(Filter{}, "1")), "the events before the restart are gone")
	require.Empty(t, drain(t, h.Join(Filter{}, "8")))
}

func TestEndEndsEveryStream(t *testing.T) {
	t.Parallel()
	h := newHub(100, 10)
	streams := []*Stream{h.Join(Filter{}, ""), h.Join(Filter{IDs: []string{"a"}}, ""), h.Join(Filter{Topics: []string{"x"}}, "")}
	h.End()
	for _, s := range streams {
		<-s.Done()
		h.Leave(s)
	}
	h.Publish([]*Event{change(1, "a", "x")})
	for _, s := range streams {
		require.Empty(t, drain(t, s))
	}
	later := h.Join(Filter{}, "")
	h.Publish([]*Event{change(2, "a", "x")})
	require.Equal(t, []string{"2"}, drain(t, later))
	select {
	case <-later.Done():
		require.Fail(t, "a stream that joined after End is not ended")
	default:
	}
}

func TestConcurrentPublishersJoinersAndWriters(t *testing.T) {
	t.Parallel()
	h := newHub(1<<20, 1000)
	const events = 2000
	var wg sync.WaitGroup
	results := make([][]string, 8)
	for i := range results {
		wg.Go(func() {
			s := h.Join(Filter{}, "")
			defer h.Leave(s)
			var b bytes.Buffer
			for {
				<-s.Ready()
				_, _ = s.WriteTo(&b) // a bytes.Buffer does not fail
				if got := frames(b.String()); len(got) > 0 && got[len(got)-1] == "end" {
					results[i] = got
					return
				}
			}
		})
	}
	// Joiners that come and go meanwhile.
	for range 8 {
		wg.Go(func() {
			for range 100 {
				h.Leave(h.Join(Filter{IDs: []string{"a"}}, h.Last()))
			}
		})
	}
	for {
		h.mu.Lock()
		joined := len(h.all)
		h.mu.Unlock()
		if joined == len(results) {
			break
		}
		runtime.Gosched()
	}
	for n := 1; n <= events; n++ {
		h.Publish([]*Event{change(n, "a", "x")})
	}
	h.Publish([]*Event{{ID: "end", Frame: []byte("end;")}})
	wg.Wait()
	for i, got := range results {
		require.Len(t, got, events+1, "stream %d", i)
		for n := 1; n <= events; n++ {
			require.Equal(t, fmt.Sprint(n), got[n-1], "stream %d", i)
		}
	}
}
