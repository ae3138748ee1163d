package sluice_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitFor polls the job until it reaches status and returns it.
func waitFor[TTx any](t *testing.T, c *sluice.Client[TTx], id string, status sluice.JobStatus) *sluice.JobRow {
	t.Helper()
	var row *sluice.JobRow
	require.Eventually(t, func() bool {
		var err error
		row, err = c.Get(t.Context(), id)
		require.NoError(t, err)
		return row.Status == status
	}, 15*time.Second, 5*time.Millisecond, "job %s never reached %s", id, status)
	return row
}

// never fails the test if cond holds at any check within d, checking every
// tick. Unlike require.Never, it checks in the test's own goroutine, so no
// check is still running, on a context or a database the test's end
// closes, once it returns.
func never(t *testing.T, cond func() bool, d, tick time.Duration, msgAndArgs ...any) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(tick) {
		if cond() {
			require.Fail(t, "condition satisfied", msgAndArgs...)
		}
	}
}

// quickRetry retries after a millisecond.
type quickRetry struct{}

func (quickRetry) NextRetry(_ *sluice.JobRow, failedAt time.Time) time.Time {
	return failedAt.Add(time.Millisecond)
}

// fakeClock is a clock the test moves by hand, starting at the real time.
type fakeClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// Args used across tests.

type noteArgs struct {
	N int `json:"n"`
}

func (noteArgs) Topic() string { return "note" }

type otherArgs struct{}

func (otherArgs) Topic() string { return "other" }

// workers returns a Workers with one function worker for noteArgs.
func workers(f func(ctx context.Context, job *sluice.Job[noteArgs]) error) *sluice.Workers {
	w := sluice.NewWorkers()
	sluice.AddWorker(w, sluice.WorkFunc(f))
	return w
}
