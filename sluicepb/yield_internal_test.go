package sluicepb

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"
	"github.com/stretchr/testify/require"
)

// request runs the gate's middleware for a request with method, and in it
// inside (PocketBase's handlers, as they would run after it).
func request(g *requestGate, method string, inside func(e *core.RequestEvent) error) error {
	var h hook.Hook[*core.RequestEvent]
	h.Bind(g.handler())
	e := &core.RequestEvent{}
	e.Request = httptest.NewRequest(method, "/api/collections/orders/records", nil)
	return h.Trigger(e, inside)
}

// waitAsync runs g.wait(ctx) in a goroutine and returns its outcome's
// channel.
func waitAsync(ctx context.Context, g *requestGate) <-chan error {
	done := make(chan error, 1)
	go func() { done <- g.wait(ctx) }()
	return done
}

// TestRequestGate: a writing request holds claims until it returns; a
// read does not; a claim made inside the request, or whose context ends,
// does not wait; the app counts as serving once a request came, and a
// claim then pauses first.
func TestRequestGate(t *testing.T) {
	t.Parallel()
	g := newRequestGate(time.Hour, "_jobs")
	require.False(t, g.serving(), "no request yet")
	require.NoError(t, g.wait(t.Context()))

	// A read is let through while it runs, and makes the app serving.
	require.NoError(t, request(g, "GET", func(e *core.RequestEvent) error {
		require.Nil(t, e.Request.Context().Value(inRequestKey{}))
		return <-waitAsync(t.Context(), g)
	}))
	require.True(t, g.serving())
	t0 := time.Now()
	require.NoError(t, g.wait(t.Context()))
	require.GreaterOrEqual(t, time.Since(t0), claimPause, "a claim while serving pauses first")

	// A writing request holds a claim until it has returned.
	inside, release := make(chan struct{}), make(chan struct{})
	var held <-chan error
	served := make(chan error, 1)
	go func() {
		served <- request(g, "POST", func(e *core.RequestEvent) error {
			// A claim from inside the request does not wait for it.
			require.NoError(t, g.wait(e.Request.Context()))
			close(inside)
			<-release
			return nil
		})
	}()
	<-inside
	held = waitAsync(t.Context(), g)
	select {
	case err := <-held:
		t.Fatalf("a claim went on while a writing request ran: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	// A claim whose context ends stops waiting, with the context's error.
	ctx, cancel := context.WithCancel(t.Context())
	cancelled := waitAsync(ctx, g)
	cancel()
	require.ErrorIs(t, <-cancelled, context.Canceled)
	close(release)
	require.NoError(t, <-served)
	require.NoError(t, <-held)

	// A handler that fails, or panics, is counted out all the same.
	boom := errors.New("boom")
	require.ErrorIs(t, request(g, "DELETE", func(*core.RequestEvent) error { return boom }), boom)
	require.Panics(t, func() { _ = request(g, "PATCH", func(*core.RequestEvent) error { panic("boom") }) })
	require.Zero(t, g.n)
}

// TestRequestGateBound: under a writing request that does not end, a
// claim waits max, then goes on.
func TestRequestGateBound(t *testing.T) {
	t.Parallel()
	const max = 30 * time.Millisecond
	g := newRequestGate(max, "_jobs")
	g.enter()
	defer g.leave()
	t0 := time.Now()
	require.NoError(t, g.wait(t.Context()))
	require.GreaterOrEqual(t, time.Since(t0), max)
}

// TestYieldToRequestsLimits: more than MaxYieldToRequests is refused.
func TestYieldToRequestsLimits(t *testing.T) {
	t.Parallel()
	_, err := (&Config{YieldToRequests: MaxYieldToRequests + 1}).withDefaults()
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "YieldToRequests", ce.Field)
	for _, d := range []time.Duration{-1, 0, MaxYieldToRequests} {
		cfg, err := (&Config{YieldToRequests: d}).withDefaults()
		require.NoError(t, err)
		require.NotZero(t, cfg.YieldToRequests)
	}
}
