package pgxdriver_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/pgxdriver"
	"github.com/sluicehq/sluice/internal/testkit/dbtest"
)

// vacuums returns how often the schema's table has been vacuumed.
func vacuums(t *testing.T, pool *pgxpool.Pool, schema, table string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT vacuum_count FROM pg_stat_user_tables
		WHERE schemaname = $1 AND relname = $2`, schema, table).Scan(&n))
	return n
}

// A running client vacuums its jobs table once the dead tuples that claims
// and completions leave reach the threshold, whether or not the server's
// autovacuum would.
func TestClientVacuumsItsTable(t *testing.T) {
	t.Parallel()
	pool, schema := dbtest.Pool(t)
	done := make(chan struct{}, 1000)
	w := sluice.NewWorkers()
	sluice.AddWorker(w, sluice.WorkFunc(func(context.Context, *sluice.Job[pgArgs]) error {
		done <- struct{}{}
		return nil
	}))
	d := pgxdriver.New(pool, pgxdriver.WithSchema(schema),
		pgxdriver.WithVacuumPolicy(50*time.Millisecond, 200, 0))
	c, err := sluice.NewClient(d, &sluice.Config{Workers: w, Logger: quiet})
	require.NoError(t, err)
	require.Zero(t, vacuums(t, pool, schema, "sluice_jobs"))
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, c.Stop(context.Background())) })
	args := make([]sluice.EnqueueParams, 500)
	for i := range args {
		args[i] = sluice.EnqueueParams{Args: pgArgs{N: i}}
	}
	_, err = c.EnqueueMany(t.Context(), args)
	require.NoError(t, err)
	for range args {
		<-done
	}
	// Statistics reach the server's shared counters within seconds.
	require.Eventually(t, func() bool { return vacuums(t, pool, schema, "sluice_jobs") > 0 }, 30*time.Second, 50*time.Millisecond,
		"the client never vacuumed a table with 1,000 dead tuples")
}

// WithoutVacuum leaves the table to autovacuum; Maintain still folds the
// counts.
func TestWithoutVacuumNeverVacuums(t *testing.T) {
	t.Parallel()
	pool, schema := dbtest.Pool(t)
	d := pgxdriver.New(pool, pgxdriver.WithSchema(schema), pgxdriver.WithoutVacuum(),
		pgxdriver.WithVacuumPolicy(10*time.Millisecond, 1, 0))
	require.NoError(t, d.Migrate(t.Context()))
	_, err := d.Executor().JobInsertMany(t.Context(), params(jobs(50, "default")))
	require.NoError(t, err)
	_, err = pool.Exec(t.Context(), `UPDATE sluice_jobs SET priority = 2`)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	d.Maintain(ctx, quiet) // returns when ctx ends
	require.Zero(t, vacuums(t, pool, schema, "sluice_jobs"))
	require.Zero(t, vacuums(t, pool, schema, "sluice_jobs_count_log"))
	require.Zero(t, countLogRows(t, pool), "the counts were not folded")
}

// countLogRows returns how many changes wait in the count log of the pool's
// schema.
func countLogRows(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM sluice_jobs_count_log`).Scan(&n))
	return n
}

// A client that starts before its table exists (another process is still
// migrating, say) vacuums it once it does.
func TestMaintainStartedBeforeTheTableExists(t *testing.T) {
	t.Parallel()
	pool, schema := dbtest.Pool(t)
	d := pgxdriver.New(pool, pgxdriver.WithSchema(schema),
		pgxdriver.WithVacuumPolicy(20*time.Millisecond, 100, 0))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); d.Maintain(ctx, quiet) }()
	t.Cleanup(func() { cancel(); <-done })
	time.Sleep(100 * time.Millisecond) // a few rounds without a table
	require.NoError(t, d.Migrate(t.Context()))
	_, err := d.Executor().JobInsertMany(t.Context(), params(jobs(300, "default")))
	require.NoError(t, err)
	_, err = pool.Exec(t.Context(), `UPDATE sluice_jobs SET priority = 2`)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return vacuums(t, pool, schema, "sluice_jobs") > 0 }, 30*time.Second, 50*time.Millisecond,
		"the table was never vacuumed")
}

// analyzes returns how often the schema's jobs table has been analyzed by
// anything but autovacuum.
func analyzes(t *testing.T, pool *pgxpool.Pool, schema string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT analyze_count FROM pg_stat_user_tables
		WHERE schemaname = $1 AND relname = 'sluice_jobs'`, schema).Scan(&n))
	return n
}

// A backlog on a table the planner has no statistics of (here, never
// analyzed, as a fresh table filled faster than autovacuum comes round,
// and vacuumed but not analyzed) makes it expect a handful of pending
// jobs; at 300,000 it then claimed by reading and sorting all of them,
// 165 ms a claim. A running client sees the estimate is far off the
// counts and analyzes the table. A queue with few pending jobs is left
// alone.
func TestClientAnalyzesWhenThePlannerMisjudgesPendingJobs(t *testing.T) {
	t.Parallel()
	d, pool, schema := newDriver(t, pgxdriver.WithVacuumPolicy(10*time.Millisecond, 1<<40, 0))
	ctx := t.Context()
	_, err := pool.Exec(ctx, `ALTER TABLE sluice_jobs SET (autovacuum_enabled = false)`)
	require.NoError(t, err)
	maintain := func() {
		mctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		d.Maintain(mctx, quiet) // returns when mctx ends
	}
	_, err = d.Executor().JobInsertMany(ctx, params(jobs(500, "default")))
	require.NoError(t, err)
	maintain()
	require.Zero(t, analyzes(t, pool, schema), "analyzed for 500 pending jobs")

	for range 15 {
		_, err = d.Executor().JobInsertMany(ctx, params(jobs(2000, "default")))
		require.NoError(t, err)
	}
	// A vacuum (Maintain's own, or autovacuum's) sets the table's size in
	// the catalog, but no column statistics.
	_, err = pool.Exec(ctx, `VACUUM sluice_jobs`)
	require.NoError(t, err)
	expected := func() float64 {
		var plan []byte
		require.NoError(t, pool.QueryRow(ctx, `EXPLAIN (FORMAT JSON) SELECT FROM sluice_jobs
			WHERE status = 'pending' AND queue = 'default'`).Scan(&plan))
		var explained []struct {
			Plan struct {
				Rows float64 `json:"Plan Rows"`
			}
		}
		require.NoError(t, json.Unmarshal(plan, &explained))
		return explained[0].Plan.Rows
	}
	require.Less(t, expected(), 30_500.0/10, "the planner no longer misjudges a table it has no statistics of")

	maintain()
	require.Equal(t, int64(1), analyzes(t, pool, schema))
	require.InDelta(t, 30_500, expected(), 3_000)
	claimSQL, _, _ := d.Queries()
	plan := explainMode(t, pool, "force_custom_plan", "EXPLAIN", claimSQL,
		"c", time.Now(), time.Now(), "default", []string{"work"}, 100)
	require.NotContains(t, plan, "Sort", "plan:\n%s", plan)
	require.Contains(t, plan, "Index Scan using sluice_jobs_claim_idx", "plan:\n%s", plan)
}

// An analyze that leaves the planner's estimate as far off (here skipped,
// as another transaction holds the table as autovacuum does) is not tried
// again at once: not before analyzeUnfixed has passed.
func TestClientAnalyzeWaitsLongerWhenItChangedNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		unfixed time.Duration
		want    int64
	}{{time.Hour, 0}, {10 * time.Millisecond, 1}} {
		d, pool, schema := newDriver(t, pgxdriver.WithVacuumPolicy(10*time.Millisecond, 1<<40, 0),
			pgxdriver.WithAnalyzePolicy(10*time.Millisecond, tc.unfixed))
		ctx := t.Context()
		_, err := pool.Exec(ctx, `ALTER TABLE sluice_jobs SET (autovacuum_enabled = false)`)
		require.NoError(t, err)
		for range 2 {
			_, err = d.Executor().JobInsertMany(ctx, params(jobs(2000, "default")))
			require.NoError(t, err)
		}
		_, err = pool.Exec(ctx, `VACUUM sluice_jobs`)
		require.NoError(t, err)

		holder, err := pool.Begin(ctx)
		require.NoError(t, err)
		_, err = holder.Exec(ctx, `LOCK TABLE sluice_jobs IN SHARE UPDATE EXCLUSIVE MODE`)
		require.NoError(t, err)
		mctx, cancel := context.WithTimeout(ctx, 800*time.Millisecond)
		defer cancel()
		done := make(chan struct{})
		go func() {
			defer close(done)
			d.Maintain(mctx, quiet)
		}()
		time.Sleep(300 * time.Millisecond) // Maintain's analyze is skipped meanwhile
		require.NoError(t, holder.Rollback(ctx))
		<-done
		require.Equal(t, tc.want, analyzes(t, pool, schema), "waiting %v after an analyze that changed nothing", tc.unfixed)
	}
}
