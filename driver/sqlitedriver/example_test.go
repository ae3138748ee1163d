package sqlitedriver_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// Example opens a database file, creates the schema, enqueues a job in the
// application's own transaction and claims it.
func Example() {
	dir, err := os.MkdirTemp("", "sqlitedriver-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	db, err := sqlitedriver.Open(filepath.Join(dir, "app.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	drv := sqlitedriver.New(db)
	if err := drv.Migrate(ctx); err != nil {
		log.Fatal(err)
	}

	now := time.Now()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	// ... the application's own writes in tx ...
	_, err = drv.UnwrapExecutor(tx).JobInsertMany(ctx, &driver.JobInsertManyParams{Jobs: []*driver.JobInsert{{
		ID: "0190f5d2-0000-7000-8000-000000000001", Topic: "mail_digest", Queue: "default",
		Payload: []byte(`{"to":"a@b.c"}`), MaxRetries: 3, RunAt: now, CreatedAt: now,
	}}})
	if err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		log.Fatal(err)
	}

	jobs, err := drv.Executor().JobClaim(ctx, &driver.JobClaimParams{
		ClientID: "worker-1", Queue: "default", Topics: []string{"mail_digest"},
		Limit: 10, Now: now, LockedUntil: now.Add(time.Minute),
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, j := range jobs {
		fmt.Println(j.Topic, j.Status, j.Attempt, string(j.Payload))
	}
	// Output: mail_digest processing 1 {"to":"a@b.c"}
}
