package sluicepb_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluicepb"
)

// TestClaimsYieldToWritingRequests: while a request that may write is in
// flight, the queue takes no new job (up to Config.YieldToRequests), and
// takes it once the request has been answered; a GET in flight holds
// nothing, and neither does a request when yielding is off.
func TestClaimsYieldToWritingRequests(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		method string
		yield  time.Duration
		held   bool
	}{
		{"POST held", http.MethodPost, time.Second, true},
		{"DELETE held", http.MethodDelete, time.Second, true},
		{"GET not held", http.MethodGet, time.Second, false},
		{"yielding off", http.MethodPost, -1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			started := make(chan string, 1)
			p := newApp(t, &sluicepb.Config{YieldToRequests: tc.yield}, func(j *sluicepb.Jobs) {
				if tc.yield > 0 {
					// Longer than the test, so that a claim never runs
					// out of patience while the request lasts.
					sluicepb.SetYieldMax(j, time.Hour)
				}
				require.NoError(t, sluicepb.AddWorker(j, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[ChargeArgs]) error {
					started <- job.Args.Order
					return nil
				})))
			})
			entered, release := make(chan struct{}), make(chan struct{})
			p.app.OnServe().BindFunc(func(e *core.ServeEvent) error {
				e.Router.Route(tc.method, "/slow", func(re *core.RequestEvent) error {
					close(entered)
					<-release
					return re.NoContent(http.StatusNoContent)
				})
				return e.Next()
			})
			p.serve(t)
			answered := make(chan int, 1)
			go func() {
				req, err := http.NewRequestWithContext(t.Context(), tc.method, p.url+"/slow", nil)
				if err != nil {
					answered <- 0
					return
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					answered <- 0
					return
				}
				_ = res.Body.Close()
				answered <- res.StatusCode
			}()
			<-entered
			p.enqueue(t, ChargeArgs{Order: "o1"}) // an insert does not wait
			if tc.held {
				select {
				case <-started:
					t.Fatal("a job started while a writing request was in flight")
				case <-time.After(500 * time.Millisecond):
				}
				close(release)
				require.Equal(t, http.StatusNoContent, <-answered)
				select {
				case got := <-started:
					require.Equal(t, "o1", got)
				case <-time.After(20 * time.Second):
					t.Fatal("the job did not start once the request was answered")
				}
				return
			}
			select {
			case got := <-started:
				require.Equal(t, "o1", got)
			case <-time.After(20 * time.Second):
				t.Fatal("the job did not start while the request was in flight")
			}
			close(release)
			require.Equal(t, http.StatusNoContent, <-answered)
		})
	}
}

// TestYieldToRequestsBound: under writing requests that never end, the
// queue still takes its jobs, each claim waiting at most
// YieldToRequests.
func TestYieldToRequestsBound(t *testing.T) {
	t.Parallel()
	started := make(chan string, 3)
	p := newApp(t, &sluicepb.Config{YieldToRequests: 50 * time.Millisecond}, func(j *sluicepb.Jobs) {
		require.NoError(t, sluicepb.AddWorker(j, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[ChargeArgs]) error {
			started <- job.Args.Order
			return nil
		})))
	})
	entered, release := make(chan struct{}), make(chan struct{})
	p.app.OnServe().BindFunc(func(e *core.ServeEvent) error {
		e.Router.POST("/slow", func(re *core.RequestEvent) error {
			entered <- struct{}{}
			<-release
			return re.NoContent(http.StatusNoContent)
		})
		return e.Next()
	})
	p.serve(t)
	defer close(release)
	go func() {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, p.url+"/slow", nil)
		if err == nil {
			if res, err := http.DefaultClient.Do(req); err == nil {
				_ = res.Body.Close()
			}
		}
	}()
	<-entered
	for _, o := range []string{"o1", "o2", "o3"} {
		p.enqueue(t, ChargeArgs{Order: o})
	}
	got := map[string]bool{}
	for range 3 {
		select {
		case o := <-started:
			got[o] = true
		case <-time.After(20 * time.Second):
			t.Fatalf("only %d of 3 jobs started under a request that never ends", len(got))
		}
	}
	require.Len(t, got, 3)
}
