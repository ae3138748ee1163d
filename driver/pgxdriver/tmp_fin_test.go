package pgxdriver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/pgxdriver"
)

func BenchmarkTmpFin(b *testing.B) {
	d, pool := benchDriver(b)
	backlog(b, pool, 100000, "pending")
	ctx := context.Background()
	for round := 0; round < 8; round++ {
		now := time.Now()
		rows, err := d.Executor().JobClaim(ctx, &driver.JobClaimParams{ClientID: "c", Queue: "default", Topics: []string{"bench"}, Limit: 2000, Now: now, LockedUntil: now.Add(time.Minute)})
		if err != nil {
			b.Fatal(err)
		}
		items := make([]*driver.JobFinalize, len(rows))
		for i, r := range rows {
			items[i] = &driver.JobFinalize{ID: r.ID, Attempt: r.Attempt, LockedBy: "c", Status: driver.StatusCompleted, FinalizedAt: now, RunAt: r.RunAt}
		}
		if round == 7 {
			args, _, _ := pgxdriver.FinalizeArgs(items)
			tx, _ := pool.Begin(ctx)
			r, err := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+d.FinalizeQuery(), args...)
			if err != nil {
				b.Fatal(err)
			}
			lines, _ := pgx.CollectRows(r, pgx.RowTo[string])
			fmt.Println(strings.Join(lines, "\n"))
			tx.Rollback(ctx)
		}
		t0 := time.Now()
		if _, err := d.Executor().JobFinalize(ctx, &driver.JobFinalizeParams{Jobs: items}); err != nil {
			b.Fatal(err)
		}
		fmt.Println("claimed", len(rows), "finalize took", time.Since(t0))
	}
}
