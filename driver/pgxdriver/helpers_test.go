package pgxdriver_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/drivertest"
	"github.com/sluicehq/sluice/driver/pgxdriver"
	"github.com/sluicehq/sluice/internal/testkit/dbtest"
)

// newDriver returns a migrated driver on a fresh schema, its pool and the
// schema's name.
func newDriver(t testing.TB, opts ...pgxdriver.Option) (*pgxdriver.Driver, *pgxpool.Pool, string) {
	t.Helper()
	pool, schema := dbtest.Pool(t)
	d := pgxdriver.New(pool, append([]pgxdriver.Option{pgxdriver.WithSchema(schema)}, opts...)...)
	require.NoError(t, d.Migrate(context.Background()), "Migrate")
	return d, pool, schema
}

// setup returns the conformance suite's Setup over d and pool.
func setup(d *pgxdriver.Driver, pool *pgxpool.Pool) *drivertest.Setup[pgx.Tx] {
	return &drivertest.Setup[pgx.Tx]{
		Driver:   d,
		Begin:    func(ctx context.Context) (pgx.Tx, error) { return pool.Begin(ctx) },
		Commit:   func(ctx context.Context, tx pgx.Tx) error { return tx.Commit(ctx) },
		Rollback: func(ctx context.Context, tx pgx.Tx) error { return tx.Rollback(ctx) },
	}
}

// newJob returns a job due now in queue, of topic "work".
func newJob(queue string) *driver.JobInsert {
	now := time.Now()
	return &driver.JobInsert{
		ID:         newID(),
		Topic:      "work",
		Queue:      queue,
		Priority:   1,
		Payload:    []byte(`{"n": 1}`),
		MaxRetries: 3,
		RunAt:      now,
		CreatedAt:  now,
	}
}

// newID returns a random version 4 UUID in its canonical text form.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// jobs returns n new jobs of queue.
func jobs(n int, queue string) []*driver.JobInsert {
	out := make([]*driver.JobInsert, n)
	for i := range out {
		out[i] = newJob(queue)
	}
	return out
}

// params returns insert params for jobs.
func params(jobs []*driver.JobInsert) *driver.JobInsertManyParams {
	return &driver.JobInsertManyParams{Jobs: jobs}
}

// claim claims up to limit jobs of queue "default" as client, now, with a
// lease of a minute.
func claim(t testing.TB, d *pgxdriver.Driver, client string, limit int) []*driver.JobRow {
	t.Helper()
	now := time.Now()
	rows, err := d.Executor().JobClaim(context.Background(), &driver.JobClaimParams{
		ClientID: client, Queue: "default", Topics: []string{"work"}, Limit: limit,
		Now: now, LockedUntil: now.Add(time.Minute),
	})
	require.NoError(t, err)
	return rows
}
