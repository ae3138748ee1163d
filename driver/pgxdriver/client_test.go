package pgxdriver_test

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/pgxdriver"
	"github.com/sluicehq/sluice/internal/testkit/dbtest"
)

// Client-level behaviour that depends on Postgres itself.

type pgArgs struct {
	N int `json:"n"`
}

func (pgArgs) Topic() string { return "pg" }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestNewClientWithAnUnreachableDatabaseFailsClearly(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(t.Context(), "postgres://postgres@127.0.0.1:1/test?connect_timeout=5")
	require.NoError(t, err) // pools connect lazily
	t.Cleanup(pool.Close)
	start := time.Now()
	_, err = sluice.NewClient(pgxdriver.New(pool), &sluice.Config{Logger: quiet})
	require.Error(t, err)
	require.Contains(t, err.Error(), "migrate")
	require.Contains(t, err.Error(), "127.0.0.1")
	require.Less(t, time.Since(start), 30*time.Second, "an unreachable database must not hang NewClient")
}

func TestAckOfADeletedJobIsLeaseLost(t *testing.T) {
	t.Parallel()
	pool, schema := dbtest.Pool(t)
	started, deleted := make(chan string, 1), make(chan struct{})
	ackErr := make(chan error, 1)
	w := sluice.NewWorkers()
	sluice.AddWorker(w, sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[pgArgs]) error {
		started <- job.ID
		<-deleted
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			return sluice.ClientFromContext[pgx.Tx](ctx).Ack(ctx, tx, job)
		})
		ackErr <- err
		return err
	}))
	c, err := sluice.NewClient(pgxdriver.New(pool, pgxdriver.WithSchema(schema)), &sluice.Config{Workers: w, Logger: quiet})
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, c.Stop(context.Background())) })
	_, err = c.Enqueue(t.Context(), pgArgs{}, nil)
	require.NoError(t, err)
	id := <-started
	_, err = pool.Exec(t.Context(), `DELETE FROM sluice_jobs WHERE id = $1`, id)
	require.NoError(t, err)
	close(deleted)
	require.ErrorIs(t, <-ackErr, sluice.ErrLeaseLost)
	_, err = c.Get(t.Context(), id)
	require.ErrorIs(t, err, sluice.ErrNotFound)
}

func TestClientSurvivesItsConnectionsBeingKilled(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t)
	schema := dbtest.Schema(t, url)
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.ConnConfig.RuntimeParams["application_name"] = "sluice-" + schema // so the killer hits only these
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	const jobs = 300
	var done atomic.Int32
	w := sluice.NewWorkers()
	sluice.AddWorker(w, sluice.WorkFunc(func(context.Context, *sluice.Job[pgArgs]) error {
		done.Add(1)
		time.Sleep(10 * time.Millisecond) // 300 jobs over 10 workers: about 300 ms
		return nil
	}))
	c, err := sluice.NewClient(pgxdriver.New(pool, pgxdriver.WithSchema(schema)), &sluice.Config{
		Workers: w, Logger: quiet, PollInterval: 50 * time.Millisecond,
	})
	require.NoError(t, err)
	params := make([]sluice.EnqueueParams, jobs)
	for i := range params {
		params[i] = sluice.EnqueueParams{Args: pgArgs{N: i}}
	}
	_, err = c.EnqueueMany(t.Context(), params)
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, c.Stop(context.Background())) })

	killer, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	defer killer.Close(context.Background())
	killed := 0
	for range 5 {
		time.Sleep(50 * time.Millisecond)
		rows, err := killer.Query(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE application_name = $1`, "sluice-"+schema)
		require.NoError(t, err)
		for rows.Next() {
			killed++
		}
		require.NoError(t, rows.Err())
	}
	require.Positive(t, killed, "the test must actually kill connections")
	require.Eventually(t, func() bool {
		var left int
		err := pool.QueryRow(t.Context(), `SELECT count(*) FROM sluice_jobs WHERE status <> 'completed'`).Scan(&left)
		return err == nil && left == 0
	}, time.Minute, 50*time.Millisecond, "the backlog drains after the connections come back")
	require.GreaterOrEqual(t, int(done.Load()), jobs)
}

func TestPollOnlyClientHoldsNoListenConnection(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t)
	schema := dbtest.Schema(t, url)
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.ConnConfig.RuntimeParams["application_name"] = "sluice-" + schema
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	ran := make(chan struct{}, 1)
	w := sluice.NewWorkers()
	sluice.AddWorker(w, sluice.WorkFunc(func(context.Context, *sluice.Job[pgArgs]) error {
		ran <- struct{}{}
		return nil
	}))
	d := pgxdriver.New(pool, pgxdriver.WithSchema(schema))
	c, err := sluice.NewClient(d, &sluice.Config{Workers: w, Logger: quiet, PollOnly: true, PollInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, c.Stop(context.Background())) })

	// Another client (insert-only) enqueues: only polling can find the job.
	other, err := sluice.NewClient(d, &sluice.Config{Logger: quiet})
	require.NoError(t, err)
	_, err = other.Enqueue(t.Context(), pgArgs{}, nil)
	require.NoError(t, err)
	<-ran
	var listening int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
		WHERE application_name = $1 AND query ILIKE 'LISTEN%'`, "sluice-"+schema).Scan(&listening))
	require.Zero(t, listening)
}
