package pgxdriver_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

// Inserts on the pool that arrive together are combined into one
// statement; each must still succeed or fail on its own.
func TestCombinedInsertsSucceedOrFailAlone(t *testing.T) {
	t.Parallel()
	d, pool, _ := newDriver(t)
	ctx := context.Background()
	existing := newJob("default")
	_, err := d.Executor().JobInsertMany(ctx, params([]*driver.JobInsert{existing}))
	require.NoError(t, err)

	const goroutines, rounds = 24, 20
	var (
		mu       sync.Mutex
		inserted []string
		failed   int
		wg       sync.WaitGroup
	)
	for g := range goroutines {
		wg.Go(func() {
			for r := range rounds {
				j := newJob("default")
				bad := (g+r)%7 == 0
				if bad {
					dup := *existing // same ID as a stored job
					j = &dup
				}
				_, err := d.Executor().JobInsertMany(ctx, params([]*driver.JobInsert{j}))
				mu.Lock()
				if bad {
					if err == nil {
						t.Errorf("insert of a duplicate ID succeeded")
					}
					failed++
				} else {
					if err != nil {
						t.Errorf("insert of a new job failed: %v", err)
					}
					inserted = append(inserted, j.ID)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.NotZero(t, failed)
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM sluice_jobs WHERE id = ANY($1::uuid[])`, inserted).Scan(&n))
	require.Equal(t, len(inserted), n, "every insert that succeeded is stored")
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM sluice_jobs`).Scan(&n))
	require.Equal(t, len(inserted)+1, n, "nothing else is stored")
}

// An insert whose context ends while it waits to be combined either
// returns an error and writes nothing, or succeeds and is stored.
func TestCombinedInsertCancelledWhileWaiting(t *testing.T) {
	t.Parallel()
	d, pool, _ := newDriver(t)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		inserted []string
		all      []string
	)
	for range 40 {
		ctx, cancel := context.WithCancel(context.Background())
		j := newJob("default")
		all = append(all, j.ID)
		wg.Go(func() {
			_, err := d.Executor().JobInsertMany(ctx, params([]*driver.JobInsert{j}))
			if err == nil {
				mu.Lock()
				inserted = append(inserted, j.ID)
				mu.Unlock()
			}
		})
		wg.Go(cancel)
	}
	wg.Wait()
	var stored []string
	rows, err := pool.Query(context.Background(), `SELECT id::text FROM sluice_jobs WHERE id = ANY($1::uuid[])`, all)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		stored = append(stored, id)
	}
	require.NoError(t, rows.Err())
	require.ElementsMatch(t, inserted, stored)
}
