package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/bench/harness"
)

// budgetMetrics are the figures -budget adds to each burn-down on
// Postgres: per job worked, the statements the server ran (from
// pg_stat_statements, when the server loads it), its transactions, the
// write-ahead log it wrote, the CPU time of every Postgres process, and
// the CPU time of the measuring process and its own children.
var budgetMetrics = []string{"stmts_per_job", "xacts_per_job", "wal_bytes_per_job", "server_us_per_job", "client_us_per_job"}

// pgUsage is a reading of the server's running totals.
type pgUsage struct {
	stmts, xacts, walBytes float64
	cpu                    time.Duration
}

// usage reads the server's totals: statements (NaN without
// pg_stat_statements), transactions and WAL bytes of the whole server,
// and the CPU time of its processes on this machine (NaN when none are
// visible here).
func (r *runner) usage(ctx context.Context) (pgUsage, error) {
	var u pgUsage
	err := r.admin.QueryRow(ctx, `SELECT (SELECT sum(xact_commit + xact_rollback) FROM pg_stat_database)::float8,
		(SELECT wal_bytes FROM pg_stat_wal)::float8`).Scan(&u.xacts, &u.walBytes)
	if err != nil {
		return u, fmt.Errorf("budget: read the server's statistics: %w", err)
	}
	u.stmts = math.NaN()
	if r.statements {
		if err := r.admin.QueryRow(ctx, `SELECT coalesce(sum(calls), 0)::float8 FROM pg_stat_statements`).Scan(&u.stmts); err != nil {
			return u, fmt.Errorf("budget: read pg_stat_statements: %w", err)
		}
	}
	u.cpu = postgresCPU()
	return u, nil
}

// checkStatements reports whether the server can count statements: it
// loads pg_stat_statements (shared_preload_libraries) and the extension
// is created, or can be, in the database.
func (r *runner) checkStatements(ctx context.Context) bool {
	if _, err := r.admin.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		return false
	}
	_, err := r.admin.Exec(ctx, `SELECT 1 FROM pg_stat_statements LIMIT 1`)
	return err == nil
}

// budgetSettle is how long the after-reading waits for the measuring
// process's server processes to end and flush their statistics, which a
// backend sends when it exits.
const budgetSettle = 500 * time.Millisecond

// addBudget adds the per-job figures of a burn-down to m from the
// readings before and after it and the measuring process's CPU time.
func addBudget(m measurement, before, after pgUsage, client time.Duration) {
	jobs := m["worked"]
	if jobs <= 0 {
		return
	}
	m["stmts_per_job"] = (after.stmts - before.stmts) / jobs
	m["xacts_per_job"] = (after.xacts - before.xacts) / jobs
	m["wal_bytes_per_job"] = (after.walBytes - before.walBytes) / jobs
	m["server_us_per_job"] = math.NaN()
	if before.cpu >= 0 && after.cpu >= 0 {
		m["server_us_per_job"] = float64((after.cpu - before.cpu).Microseconds()) / jobs
	}
	m["client_us_per_job"] = float64(client.Microseconds()) / jobs
}

// noBudget marks the budget figures n/a, for a system that does not work
// through Postgres.
func noBudget(m measurement) {
	for _, k := range budgetMetrics {
		m[k] = math.NaN()
	}
}

// postgresCPU returns the CPU time used so far by the Postgres processes
// of this machine: each process's own, and what those that have ended
// used, which the postmaster counts among its children's; or -1 when no
// such process is visible (a server elsewhere).
func postgresCPU() time.Duration {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return -1
	}
	var ticks int64
	found := false
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: utime, stime, cutime and cstime are
		// the 14th to 17th fields, the 12th to 15th after the comm.
		s := string(b)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open || s[open+1:closing] != "postgres" {
			continue
		}
		f := strings.Fields(s[closing+1:])
		if len(f) < 15 {
			continue
		}
		found = true
		for _, i := range []int{11, 12, 13, 14} {
			n, _ := strconv.ParseInt(f[i], 10, 64)
			ticks += n
		}
	}
	if !found {
		return -1
	}
	return time.Duration(ticks) * time.Second / clockTicks
}

// clockTicks is the kernel's USER_HZ, the unit of /proc's CPU times: 100
// on every Linux platform Go supports.
const clockTicks = 100

// budgetApplies reports whether -budget measures spec: a burn-down on
// Postgres.
func budgetApplies(spec *harness.Spec) bool {
	return spec.Kind == harness.KindBurnDown && spec.Driver == "pg"
}
