package completer_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/internal/completer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// claimed returns an executor over a fresh SQLite database and n jobs
// claimed by client "c".
func claimed(t *testing.T, n int) (driver.Executor, []*driver.JobRow) {
	t.Helper()
	db, err := sqlitedriver.Open(filepath.Join(t.TempDir(), "jobs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	d := sqlitedriver.New(db)
	require.NoError(t, d.Migrate(t.Context()))
	exec := d.Executor()
	now := time.Now().UTC().Truncate(time.Microsecond)
	jobs := make([]*driver.JobInsert, n)
	for i := range jobs {
		jobs[i] = &driver.JobInsert{
			ID: "0190b4c2-0000-7000-8000-" + string(rune('a'+i)) + "00000000000", Topic: "t", Queue: "q",
			Payload: []byte(`{}`), MaxRetries: 3, RunAt: now, CreatedAt: now,
		}
	}
	_, err = exec.JobInsertMany(t.Context(), &driver.JobInsertManyParams{Jobs: jobs})
	require.NoError(t, err)
	rows, err := exec.JobClaim(t.Context(), &driver.JobClaimParams{
		ClientID: "c", Queue: "q", Topics: []string{"t"}, Limit: n, Now: now, LockedUntil: now.Add(time.Minute),
	})
	require.NoError(t, err)
	require.Len(t, rows, n)
	return exec, rows
}

type outcome struct {
	matched bool
	err     error
}

func TestRejectedItemDoesNotHoldBackTheOthers(t *testing.T) {
	t.Parallel()
	exec, rows := claimed(t, 3)
	c := completer.New(exec, slog.New(slog.NewTextHandler(io.Discard, nil)), 10, 2*time.Second)
	var mu sync.Mutex
	var order []string
	got := map[string]outcome{}
	var wg sync.WaitGroup
	now := time.Now().UTC()
	// The rejected item comes first, alone; the others follow.
	for i, row := range []*driver.JobRow{rows[1], rows[0], rows[2]} {
		status := driver.StatusCompleted
		if i == 0 {
			status = "bogus" // the database's CHECK constraint rejects it
		}
		wg.Add(1)
		c.Add(completer.Item{
			Finalize: &driver.JobFinalize{ID: row.ID, Attempt: row.Attempt, LockedBy: row.LockedBy, AttemptedAt: row.AttemptedAt, Status: status, FinalizedAt: now},
			Done: func(matched bool, err error) {
				mu.Lock()
				got[row.ID] = outcome{matched, err}
				order = append(order, row.ID)
				mu.Unlock()
				wg.Done()
			},
		})
	}
	wg.Wait()
	c.Stop(t.Context())
	require.True(t, got[rows[0].ID].matched)
	require.True(t, got[rows[2].ID].matched)
	require.False(t, got[rows[1].ID].matched)
	require.Error(t, got[rows[1].ID].err)
	require.Equal(t, rows[1].ID, order[2], "the rejected item, retried for its window, is given up last")
	for i, row := range rows {
		stored, err := exec.JobGet(t.Context(), &driver.JobGetParams{ID: row.ID})
		require.NoError(t, err)
		want := driver.StatusCompleted
		if i == 1 {
			want = driver.StatusProcessing // left for the rescuer
		}
		require.Equal(t, want, stored.Status)
	}
}

func TestStopWritesWhatIsQueued(t *testing.T) {
	t.Parallel()
	exec, rows := claimed(t, 5)
	c := completer.New(exec, slog.New(slog.NewTextHandler(io.Discard, nil)), 10, time.Minute)
	now := time.Now().UTC()
	for _, row := range rows {
		c.Add(completer.Item{Finalize: &driver.JobFinalize{
			ID: row.ID, Attempt: row.Attempt, LockedBy: row.LockedBy, AttemptedAt: row.AttemptedAt, Status: driver.StatusCompleted, FinalizedAt: now,
		}})
	}
	c.GiveUp() // giving up stops retries, not the first try
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	c.Stop(ctx)
	for _, row := range rows {
		stored, err := exec.JobGet(t.Context(), &driver.JobGetParams{ID: row.ID})
		require.NoError(t, err)
		require.Equal(t, driver.StatusCompleted, stored.Status)
	}
}
