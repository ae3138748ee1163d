package batch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// recorder is a run function that records the groups it ran, by their
// values, and gives each member the error of its value, if any.
type recorder struct {
	mu     sync.Mutex
	groups [][]int
	errs   map[int]error
	// gate, if set, gives a channel to wait on before a group runs, by
	// the group's first value; nil runs it at once. entered, if set, gets
	// the group's first value before that.
	gate    func(first int) <-chan struct{}
	entered chan int
}

func (rec *recorder) run(group []*Request[int]) {
	vals := make([]int, len(group))
	for i, r := range group {
		vals[i] = r.Val
	}
	if rec.entered != nil {
		rec.entered <- vals[0]
	}
	if rec.gate != nil {
		if g := rec.gate(vals[0]); g != nil {
			<-g
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.groups = append(rec.groups, vals)
	for _, r := range group {
		r.Err = rec.errs[r.Val]
	}
}

func (rec *recorder) ran() [][]int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.groups
}

// holdFirst returns a recorder that tells the first value of each group
// on entered, a channel of room n, and holds the group that starts with 1
// until gate is closed.
func holdFirst(n int) (rec *recorder, gate chan struct{}) {
	gate = make(chan struct{})
	return &recorder{entered: make(chan int, n), gate: func(v int) <-chan struct{} {
		if v == 1 {
			return gate
		}
		return nil
	}}, gate
}

// waitPending waits until n requests are in line.
func waitPending[T any](t *testing.T, q *Queue[T], n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return len(q.pending) == n
	}, 5*time.Second, time.Millisecond, "waiting for %d requests in line", n)
}

// call runs q.Do(ctx, v) in a goroutine, and returns the channel its
// result arrives on.
func call(q *Queue[int], ctx context.Context, v int) <-chan error {
	res := make(chan error, 1)
	go func() { res <- q.Do(ctx, v) }()
	return res
}

// result returns the result sent on res, failing if none comes soon.
func result(t *testing.T, res <-chan error) error {
	t.Helper()
	select {
	case err := <-res:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("no result: the request was stranded")
		return nil
	}
}

// requireWaiting checks that no result has come on res yet.
func requireWaiting(t *testing.T, res <-chan error, what string) {
	t.Helper()
	select {
	case err := <-res:
		t.Fatalf("%s returned (%v) while its request was still running", what, err)
	case <-time.After(20 * time.Millisecond):
	}
}

func TestLoneRequestRunsAtOnce(t *testing.T) {
	t.Parallel()
	bad := errors.New("bad")
	rec := &recorder{errs: map[int]error{2: bad}}
	q := New(10, nil, rec.run)
	require.NoError(t, q.Do(t.Context(), 1))
	require.ErrorIs(t, q.Do(t.Context(), 2), bad)
	require.Equal(t, [][]int{{1}, {2}}, rec.ran())
}

// A request whose context ends while it waits in line is removed: its
// caller gets the context's error and the request never runs.
func TestCancelBeforeTaken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// end returns a context, and a function that ends it once its
		// request is in line, or nil if it ends by itself.
		end  func(context.Context) (context.Context, context.CancelFunc)
		want error
	}{
		{"cancelled", context.WithCancel, context.Canceled},
		{"deadline", func(ctx context.Context) (context.Context, context.CancelFunc) {
			// Do puts every request in line before it looks at ctx.
			ctx, cancel := context.WithTimeout(ctx, time.Millisecond)
			t.Cleanup(cancel)
			return ctx, nil
		}, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{}
			q := New(10, nil, rec.run)
			require.NoError(t, q.Lock(t.Context())) // nobody leads
			before := call(q, t.Context(), 1)
			waitPending(t, q, 1)
			after := call(q, t.Context(), 3)
			waitPending(t, q, 2)
			ctx, cancel := tc.end(t.Context())
			gone := call(q, ctx, 2)
			if cancel != nil {
				waitPending(t, q, 3)
				cancel()
			}
			require.ErrorIs(t, result(t, gone), tc.want)
			waitPending(t, q, 2)
			q.Unlock()
			require.NoError(t, result(t, before))
			require.NoError(t, result(t, after))
			require.Equal(t, [][]int{{1, 3}}, rec.ran())
		})
	}
}

// A request whose context ends once a leader has taken it waits for the
// leader's result: what the run function gave it.
func TestCancelAfterTaken(t *testing.T) {
	t.Parallel()
	bad := errors.New("bad")
	gate := make(chan struct{})
	rec := &recorder{errs: map[int]error{2: bad}, entered: make(chan int, 1),
		gate: func(int) <-chan struct{} { return gate }}
	q := New(10, nil, rec.run)
	require.NoError(t, q.Lock(t.Context()))
	ctx1, cancel1 := context.WithCancel(t.Context())
	ctx2, cancel2 := context.WithCancel(t.Context())
	res1 := call(q, ctx1, 1)
	waitPending(t, q, 1)
	res2 := call(q, ctx2, 2)
	waitPending(t, q, 2)
	q.Unlock()
	<-rec.entered // one of the two leads and runs both
	cancel1()
	cancel2()
	requireWaiting(t, res1, "request 1")
	requireWaiting(t, res2, "request 2")
	close(gate)
	require.NoError(t, result(t, res1))
	require.ErrorIs(t, result(t, res2), bad)
	require.Equal(t, [][]int{{1, 2}}, rec.ran())
}

// A leader whose own request is done gives up the lead even when others
// wait, and one of those leads in turn; groups run oldest first whoever
// leads.
func TestLeaderHandsOver(t *testing.T) {
	t.Parallel()
	gates := map[int]chan struct{}{1: make(chan struct{}), 2: make(chan struct{}), 3: make(chan struct{})}
	rec := &recorder{entered: make(chan int, 3), gate: func(v int) <-chan struct{} { return gates[v] }}
	q := New(1, nil, rec.run)
	res1 := call(q, t.Context(), 1) // leads at once
	require.Equal(t, 1, <-rec.entered)
	res2 := call(q, t.Context(), 2)
	waitPending(t, q, 1)
	res3 := call(q, t.Context(), 3)
	waitPending(t, q, 2)

	close(gates[1])
	// 1's caller returns, leaving 2 and 3 to another leader, even though
	// 2's group cannot finish yet.
	require.NoError(t, result(t, res1))
	require.Equal(t, 2, <-rec.entered)
	requireWaiting(t, res2, "request 2")
	close(gates[2])
	require.NoError(t, result(t, res2))
	require.Equal(t, 3, <-rec.entered)
	close(gates[3])
	require.NoError(t, result(t, res3))
	require.Equal(t, [][]int{{1}, {2}, {3}}, rec.ran())
}

// Groups run oldest first whoever leads, and the callers in line are not
// stranded when one of them gives up.
func TestGroupsRunOldestFirstAndNobodyIsStranded(t *testing.T) {
	t.Parallel()
	rec, gate := holdFirst(10)
	q := New(2, nil, rec.run)
	res1 := call(q, t.Context(), 1)
	require.Equal(t, 1, <-rec.entered)
	ctx, cancel := context.WithCancel(t.Context())
	gone := call(q, ctx, 2)
	waitPending(t, q, 1)
	var rest []<-chan error
	for v := 3; v <= 7; v++ {
		rest = append(rest, call(q, t.Context(), v))
		waitPending(t, q, v-1)
	}
	cancel()
	require.ErrorIs(t, result(t, gone), context.Canceled)
	close(gate)
	require.NoError(t, result(t, res1))
	for _, res := range rest {
		require.NoError(t, result(t, res))
	}
	require.Equal(t, [][]int{{1}, {3, 4}, {5, 6}, {7}}, rec.ran())
}

// A group holds the oldest requests whose sizes fit the maximum, and at
// least one.
func TestMaxGroupSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		sizes []int // nil: each counts 1
		n     int
		max   int
		want  [][]int
	}{
		{"counted", nil, 7, 3, [][]int{{0, 1, 2}, {3, 4, 5}, {6}}},
		{"all fit", nil, 4, 64, [][]int{{0, 1, 2, 3}}},
		{"sized", []int{3, 3, 3, 5, 1}, 5, 6, [][]int{{0, 1}, {2}, {3, 4}}},
		{"too large runs alone", []int{10, 1, 1, 10}, 4, 6, [][]int{{0}, {1, 2}, {3}}},
		{"zero sizes", []int{0, 0, 0}, 3, 0, [][]int{{0, 1, 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{}
			var size func(int) int
			if tc.sizes != nil {
				size = func(v int) int { return tc.sizes[v] }
			}
			q := New(tc.max, size, rec.run)
			require.NoError(t, q.Lock(t.Context()))
			var res []<-chan error
			for v := range tc.n {
				res = append(res, call(q, t.Context(), v))
				waitPending(t, q, v+1)
			}
			q.Unlock()
			for _, r := range res {
				require.NoError(t, result(t, r))
			}
			require.Equal(t, tc.want, rec.ran())
		})
	}
}

// While Lock is held no group runs; Lock waits for the leader to finish,
// or for its context.
func TestLock(t *testing.T) {
	t.Parallel()
	rec, gate := holdFirst(2)
	q := New(10, nil, rec.run)
	res1 := call(q, t.Context(), 1)
	<-rec.entered
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, q.Lock(ctx), context.DeadlineExceeded)

	locked := make(chan error, 1)
	go func() { locked <- q.Lock(t.Context()) }()
	requireWaiting(t, locked, "Lock")
	close(gate)
	require.NoError(t, result(t, res1))
	require.NoError(t, result(t, locked))
	res2 := call(q, t.Context(), 2)
	waitPending(t, q, 1)
	requireWaiting(t, res2, "request 2")
	q.Unlock()
	require.NoError(t, result(t, res2))
}

// A run function that panics fails the group's members that have no
// result, panics in its leader, and leaves the queue usable.
func TestPanicInRun(t *testing.T) {
	t.Parallel()
	var gate chan struct{}
	entered := make(chan struct{}, 1)
	q := New(10, nil, func(group []*Request[int]) {
		if group[0].Val == 1 {
			entered <- struct{}{}
			<-gate
			panic("boom")
		}
	})
	// do returns q.Do's result, or what it panicked with.
	do := func(v int) <-chan any {
		res := make(chan any, 1)
		go func() {
			defer func() {
				if p := recover(); p != nil {
					res <- p
				}
			}()
			res <- q.Do(t.Context(), v)
		}()
		return res
	}

	// The leader's own group panics; a request waiting runs after.
	gate = make(chan struct{})
	res1 := do(1)
	<-entered
	res2 := do(2)
	waitPending(t, q, 1)
	close(gate)
	require.Equal(t, "boom", <-res1)
	require.Nil(t, <-res2, "2 ran in a group of its own after the panic")

	// Two requests in the group that panics: the leader panics, the
	// follower fails.
	gate = make(chan struct{})
	require.NoError(t, q.Lock(t.Context()))
	res1 = do(1)
	waitPending(t, q, 1)
	res4 := do(4)
	waitPending(t, q, 2)
	q.Unlock()
	<-entered
	close(gate)
	got := []any{<-res1, <-res4}
	require.Contains(t, got, "boom")
	require.Contains(t, got, errPanicked)
	require.Nil(t, <-do(5), "the queue still runs requests")
}

// Many callers, some giving up: every request runs at most once, and
// exactly when its caller got a result other than its context's error;
// groups never run at once nor exceed the maximum; nobody is stranded.
func TestConcurrentCallers(t *testing.T) {
	t.Parallel()
	for _, maxSize := range []int{1, 5, 64} {
		t.Run(fmt.Sprint(maxSize), func(t *testing.T) {
			t.Parallel()
			concurrentCallers(t, maxSize)
		})
	}
}

func concurrentCallers(t *testing.T, maxSize int) {
	const callers, rounds = 16, 200
	bad := errors.New("bad")
	var (
		running atomic.Int32
		mu      sync.Mutex
		ran     = map[int]int{}
	)
	q := New(maxSize, nil, func(group []*Request[int]) {
		if n := running.Add(1); n != 1 {
			t.Errorf("%d groups running at once", n)
		}
		defer running.Add(-1)
		if len(group) > maxSize {
			t.Errorf("group of %d", len(group))
		}
		mu.Lock()
		defer mu.Unlock()
		for _, r := range group {
			if r.Err = r.Ctx.Err(); r.Err != nil {
				continue
			}
			ran[r.Val]++
			if r.Val%5 == 0 {
				r.Err = bad
			}
		}
		time.Sleep(time.Duration(rand.IntN(50)) * time.Microsecond)
	})
	results := make([]error, callers*rounds)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range rounds {
				v := c*rounds + i
				ctx, cancel := context.WithCancel(t.Context())
				if v%3 == 0 {
					time.AfterFunc(time.Duration(rand.IntN(100))*time.Microsecond, cancel)
				}
				results[v] = q.Do(ctx, v)
				cancel()
			}
		})
	}
	wg.Wait()
	for v, err := range results {
		switch {
		case ran[v] > 1:
			t.Fatalf("request %d ran %d times", v, ran[v])
		case ran[v] == 0:
			require.ErrorIs(t, err, context.Canceled, "request %d never ran", v)
		case v%5 == 0:
			require.ErrorIs(t, err, bad, "request %d", v)
		default:
			require.NoError(t, err, "request %d", v)
		}
	}
	waitPending(t, q, 0)
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	require.NoError(t, q.Lock(ctx), "the token was given back")
	t.Logf("%d of %d requests ran", len(ran), len(results))
}

// BenchmarkDo measures a request's own cost through the queue, with a run
// function that does nothing: alone, and among callers that contend.
func BenchmarkDo(b *testing.B) {
	q := New(64, nil, func(group []*Request[int]) {
		for _, r := range group {
			r.Err = r.Ctx.Err()
		}
	})
	ctx := b.Context()
	b.Run("lone", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = q.Do(ctx, 1)
		}
	})
	b.Run("contended", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_ = q.Do(ctx, 1)
			}
		})
	})
}

// TestYieldFirst runs two requests on one processor, the second made by a
// goroutine ready to run when the first finds nobody leading: with
// YieldFirst they run as one group; without, one by one. Not parallel:
// it sets GOMAXPROCS for its duration.
func TestYieldFirst(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, yield := range []bool{true, false} {
		rec := &recorder{}
		q := New(10, nil, rec.run)
		if yield {
			q.YieldFirst()
		}
		var wg sync.WaitGroup
		wg.Go(func() { require.NoError(t, q.Do(t.Context(), 2)) }) // ready, not yet running
		require.NoError(t, q.Do(t.Context(), 1))
		wg.Wait()
		if yield {
			require.Equal(t, [][]int{{1, 2}}, rec.ran(), "the ready goroutine's request joins the group")
		} else {
			require.Equal(t, [][]int{{1}, {2}}, rec.ran())
		}
	}
}
