package pgxdriver_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/pgxdriver"
)

// A driver over the application's pool, its schema migrated, and a job
// inserted in the application's own transaction. (The sluice client does
// the inserting and claiming; this shows what the driver does for it.)
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	drv := pgxdriver.New(pool, pgxdriver.WithSchema("jobs"))
	if err := drv.Migrate(ctx); err != nil {
		log.Fatal(err)
	}

	tx, err := pool.Begin(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	// ... the application's own writes in tx ...
	now := time.Now()
	res, err := drv.UnwrapExecutor(tx).JobInsertMany(ctx, &driver.JobInsertManyParams{Jobs: []*driver.JobInsert{{
		ID: "0190b6a8-5c3e-7d2a-9f10-3a5b7c9d1e2f", Topic: "mail_digest", Queue: "default",
		Payload: []byte(`{"to": "a@b.c"}`), MaxRetries: 3, RunAt: now, CreatedAt: now,
	}}})
	if err != nil {
		log.Fatal(err)
	}
	// The job exists, and listeners hear of it, only once tx commits.
	if err := tx.Commit(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println(res[0].Job.Status)
}

// A driver that never listens: clients find other processes' jobs by
// polling.
func ExampleWithoutListen() {
	pool, err := pgxpool.New(context.Background(), os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	drv := pgxdriver.New(pool, pgxdriver.WithoutListen())
	_, err = drv.Listen(context.Background(), func(driver.Notification) {})
	fmt.Println(err)
}

// A driver whose pool goes through PgBouncer in transaction mode
// (PGBOUNCER_URL, say postgres://app@pgbouncer:6432/app), sending no
// prepared statement by name, and listening on a direct connection to the
// server (DATABASE_URL).
func ExampleWithListenURL() {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(os.Getenv("PGBOUNCER_URL"))
	if err != nil {
		log.Fatal(err)
	}
	// Or default_query_exec_mode=cache_describe in the URL. With PgBouncer
	// 1.21 or later and max_prepared_statements above 0, pgx's default
	// works too.
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	drv := pgxdriver.New(pool, pgxdriver.WithListenURL(os.Getenv("DATABASE_URL")))
	stop, err := drv.Listen(ctx, func(n driver.Notification) { fmt.Println("jobs in", n.Queue) })
	if err != nil {
		log.Fatal(err)
	}
	defer stop()
}
