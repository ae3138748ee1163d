package sqlitedriver_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// TestConcurrentClaimers claims and completes jobs from several handles on
// one file (as several processes would), each with several goroutines, while
// more jobs are inserted and the service writes in its own transactions. No
// job is claimed twice, every job is completed, and no operation fails
// (SQLITE_BUSY included).
func TestConcurrentClaimers(t *testing.T) {
	t.Parallel()
	const (
		handles   = 3
		claimers  = 2 // per handle
		perInsert = 50
		inserts   = 6 // per handle
		total     = handles * inserts * perInsert
	)
	_, path := openDB(t, 0)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	drivers := make([]*sqlitedriver.Driver, handles)
	for i := range drivers {
		db, err := sqlitedriver.Open(path)
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		drivers[i] = sqlitedriver.New(db)
		require.NoError(t, drivers[i].Migrate(ctx))
	}

	var (
		mu      sync.Mutex
		claimed = make(map[string]string) // job ID -> claimer
		errs    []error
		wg      sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	for h, d := range drivers {
		wg.Go(func() {
			for range inserts {
				var jobs []*driver.JobInsert
				for range perInsert {
					jobs = append(jobs, newJob())
				}
				if _, err := d.Executor().JobInsertMany(ctx, &driver.JobInsertManyParams{Jobs: jobs}); err != nil {
					fail(err)
				}
			}
		})
		for c := range claimers {
			client := fmt.Sprintf("h%d-c%d", h, c)
			wg.Go(func() {
				for {
					mu.Lock()
					done := len(claimed) == total || len(errs) > 0
					mu.Unlock()
					if done || ctx.Err() != nil {
						return
					}
					if err := claimAndComplete(ctx, d.Executor(), client, &mu, claimed); err != nil {
						fail(err)
						return
					}
				}
			})
		}
		// The service's own write transactions on the same file.
		wg.Go(func() {
			if err := serviceWrites(ctx, path, d); err != nil {
				fail(err)
			}
		})
	}
	wg.Wait()
	require.Empty(t, errs)
	require.Len(t, claimed, total)
	for id := range claimed {
		require.Equal(t, driver.StatusCompleted, get(t, drivers[0].Executor(), id).Status)
	}
}

// claimAndComplete claims up to ten jobs as client, records them in claimed
// (failing if another claimer already had one) and completes them.
func claimAndComplete(ctx context.Context, ex driver.Executor, client string, mu *sync.Mutex, claimed map[string]string) error {
	jobs, err := ex.JobClaim(ctx, &driver.JobClaimParams{
		ClientID: client, Queue: "default", Topics: []string{"email"}, Limit: 10, Now: base, LockedUntil: base.Add(time.Hour),
	})
	if err != nil {
		return err
	}
	var fin []*driver.JobFinalize
	mu.Lock()
	for _, j := range jobs {
		if prev, ok := claimed[j.ID]; ok {
			mu.Unlock()
			return fmt.Errorf("job %s claimed by %s and %s", j.ID, prev, client)
		}
		claimed[j.ID] = client
		fin = append(fin, &driver.JobFinalize{ID: j.ID, Attempt: j.Attempt, LockedBy: client, AttemptedAt: j.AttemptedAt, Status: driver.StatusCompleted, FinalizedAt: base})
	}
	mu.Unlock()
	if len(fin) == 0 {
		return nil
	}
	matched, err := ex.JobFinalize(ctx, &driver.JobFinalizeParams{Jobs: fin})
	if err != nil {
		return err
	}
	for i, m := range matched {
		if !m {
			return fmt.Errorf("job %s: finalize did not match", fin[i].ID)
		}
	}
	return nil
}

// serviceWrites runs, as an application would on its own handle of the file
// at path, write transactions that include an operation of d.
func serviceWrites(ctx context.Context, path string, d *sqlitedriver.Driver) error {
	db, err := sqlitedriver.Open(path)
	if err != nil {
		return err
	}
	defer db.Close()
	for range 20 {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		_, err = d.UnwrapExecutor(tx).JobHeartbeat(ctx, &driver.JobHeartbeatParams{ClientID: "nobody", LockedUntil: base})
		if err != nil {
			_ = tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}
