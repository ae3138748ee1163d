package main

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/testkit/dbtest"
)

// TestBudgetReadsTheServer reads the server's totals around work done on
// it: the transactions and WAL it counts grow by what was done, and the
// CPU time of its processes, which run on this machine, is counted.
func TestBudgetReadsTheServer(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t)
	schema := dbtest.Schema(t, url)
	ctx := t.Context()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	r := &runner{admin: admin, budget: true}
	r.statements = r.checkStatements(ctx)
	before, err := r.usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if before.cpu <= 0 {
		t.Fatalf("no CPU time read for the local server's processes: %v", before.cpu)
	}
	// The work is done on a connection of its own, closed after it, as a
	// measurement's child programs exit: a backend that stays open and
	// idle may hold its last second's statistics back for ten seconds
	// (Postgres 15), one that ends sends them as it goes.
	work, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	table := pgx.Identifier{schema, "budget_probe"}.Sanitize()
	if _, err := work.Exec(ctx, `CREATE TABLE `+table+` (n int)`); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := work.Exec(ctx, `INSERT INTO `+table+` SELECT g FROM generate_series(1, 1000) g WHERE $1::int >= 0`, i); err != nil {
			t.Fatal(err)
		}
	}
	if err := work.Close(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(budgetSettle + time.Second) // a backend sends its statistics at most once a second
	after, err := r.usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := after.xacts - before.xacts; d < 50 {
		t.Errorf("the server counted %v transactions, want at least 50", d)
	}
	if d := after.walBytes - before.walBytes; d < 50*1000*10 {
		t.Errorf("the server wrote %v bytes of WAL for 50,000 rows", d)
	}
	if after.cpu < before.cpu {
		t.Errorf("the server's CPU time went down: %v to %v", before.cpu, after.cpu)
	}
	if r.statements && after.stmts-before.stmts < 50 {
		t.Errorf("pg_stat_statements counted %v statements, want at least 50", after.stmts-before.stmts)
	}
	if !r.statements && !math.IsNaN(after.stmts) {
		t.Errorf("statements without pg_stat_statements: %v", after.stmts)
	}
}

// TestAddBudgetDividesByTheJobsWorked checks the per-job arithmetic, and
// that a burn-down that worked nothing gets no figures.
func TestAddBudgetDividesByTheJobsWorked(t *testing.T) {
	t.Parallel()
	m := measurement{"worked": 1000}
	before := pgUsage{stmts: 10, xacts: 100, walBytes: 5000, cpu: time.Second}
	after := pgUsage{stmts: 2010, xacts: 110, walBytes: 505000, cpu: 1500 * time.Millisecond}
	addBudget(m, before, after, 250*time.Millisecond)
	want := measurement{"worked": 1000, "stmts_per_job": 2, "xacts_per_job": 0.01, "wal_bytes_per_job": 500,
		"server_us_per_job": 500, "client_us_per_job": 250}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	after.cpu = -1 // a server elsewhere
	addBudget(m, before, after, 0)
	if !math.IsNaN(m["server_us_per_job"]) {
		t.Errorf("server CPU of a server elsewhere: %v", m["server_us_per_job"])
	}
	none := measurement{"worked": 0}
	addBudget(none, before, after, time.Second)
	if len(none) != 1 {
		t.Errorf("figures for a burn-down that worked nothing: %v", none)
	}
}
