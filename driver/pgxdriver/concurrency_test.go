package pgxdriver_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

// TestConcurrentClaimers runs many claimers, each finalizing what it
// claims, over a backlog: every job is claimed exactly once and completed.
func TestConcurrentClaimers(t *testing.T) {
	t.Parallel()
	d, _, _ := newDriver(t)
	ctx := t.Context()
	const jobCount, claimers = 600, 16
	_, err := d.Executor().JobInsertMany(ctx, params(jobs(jobCount, "default")))
	require.NoError(t, err)

	var (
		mu      sync.Mutex
		claimed = map[string]int{}
		wg      sync.WaitGroup
		errs    = make([]error, claimers)
	)
	for c := range claimers {
		client := fmt.Sprintf("claimer-%d", c)
		wg.Go(func() {
			errs[c] = func() error {
				for {
					now := time.Now()
					rows, err := d.Executor().JobClaim(ctx, &driver.JobClaimParams{
						ClientID: client, Queue: "default", Topics: []string{"work"},
						Limit: 7, Now: now, LockedUntil: now.Add(time.Minute),
					})
					if err != nil || len(rows) == 0 {
						return err
					}
					items := make([]*driver.JobFinalize, len(rows))
					mu.Lock()
					for i, r := range rows {
						claimed[r.ID]++
						items[i] = &driver.JobFinalize{ID: r.ID, Attempt: r.Attempt, LockedBy: client, AttemptedAt: r.AttemptedAt,
							Status: driver.StatusCompleted, FinalizedAt: now}
					}
					mu.Unlock()
					matched, err := d.Executor().JobFinalize(ctx, &driver.JobFinalizeParams{Jobs: items})
					if err != nil {
						return err
					}
					for i, ok := range matched {
						if !ok {
							return fmt.Errorf("finalize of %s did not match", items[i].ID)
						}
					}
				}
			}()
		})
	}
	wg.Wait()
	for c, err := range errs {
		require.NoError(t, err, "claimer %d", c)
	}
	require.Len(t, claimed, jobCount, "jobs claimed")
	for id, n := range claimed {
		require.Equal(t, 1, n, "job %s claimed %d times", id, n)
	}
}

// TestConcurrentUnique inserts jobs with one unique key from many
// goroutines at once: exactly one is inserted and every other call gets it
// back as a duplicate.
func TestConcurrentUnique(t *testing.T) {
	t.Parallel()
	d, _, _ := newDriver(t)
	ctx := t.Context()
	for round := range 5 {
		key := fmt.Sprintf("key-%d", round)
		const n = 8
		var wg sync.WaitGroup
		res := make([]driver.JobInsertResult, n)
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				j := newJob("default")
				j.UniqueKey = key
				out, err := d.Executor().JobInsertMany(ctx, params([]*driver.JobInsert{j}))
				errs[i] = err
				if err == nil {
					res[i] = out[0]
				}
			})
		}
		wg.Wait()
		inserted := ""
		for i := range n {
			require.NoError(t, errs[i], "insert %d", i)
			if !res[i].Duplicate {
				require.Empty(t, inserted, "two jobs inserted with key %s", key)
				inserted = res[i].Job.ID
			}
		}
		require.NotEmpty(t, inserted, "no job inserted with key %s", key)
		for i := range n {
			require.Equal(t, inserted, res[i].Job.ID, "result %d", i)
		}
	}
}
