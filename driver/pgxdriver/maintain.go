package pgxdriver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/driver"
)

// Vacuum defaults: how often a running client looks at the jobs table's
// dead tuples, and how many make it vacuum the table.
const (
	vacuumCheckEvery = time.Second
	vacuumMinDead    = 20_000
	vacuumDeadShare  = 0.10
	vacuumTimeout    = 10 * time.Minute
)

// Statistics defaults: how many rounds of Maintain pass between looks at
// the planner's estimates of pending jobs, the fewest pending jobs in a
// queue worth a look, how many times fewer the planner may expect before
// the table is analyzed, and the least time between two analyzes by one
// client.
const (
	analyzeCheckRounds = 5
	analyzeMinPending  = 1_000
	analyzeMisestimate = 10
	analyzeAtMostEvery = 10 * time.Second
)

// vacuumPolicy is when [Driver.Maintain] vacuums the jobs table.
type vacuumPolicy struct {
	off     bool
	every   time.Duration
	minDead int64
	perLive float64
}

// due reports whether a table with dead and live tuples needs a vacuum.
func (p *vacuumPolicy) due(dead, live int64) bool {
	return dead >= p.minDead && float64(dead) >= p.perLive*float64(live)
}

// WithoutVacuum stops running clients from vacuuming and analyzing the
// jobs table (see [Driver.Maintain]). Use it when something else vacuums
// and analyzes the table often enough, or when the database user may not
// and the warning is unwelcome.
func WithoutVacuum() Option {
	return func(d *Driver) { d.vacuum.off = true }
}

// Maintain keeps the jobs table fit for claims, and its counts folded,
// while a client runs, until ctx ends; the client calls it (it implements
// driver.Maintainer).
//
// Every claim and completion updates a row, and each update leaves a dead
// row version behind, and a dead entry in the pending-jobs index that every
// later claim steps over until a vacuum removes it. Autovacuum visits a
// table at most once per autovacuum_naptime (a minute by default), and not
// at all on a server that runs with autovacuum off, so at a few thousand
// jobs a second claims slow down as the dead entries pile up. Once a second
// Maintain reads the table's dead and live tuple counts from the
// statistics, and when dead tuples number at least 20,000 and a tenth of the
// live ones, runs VACUUM (SKIP_LOCKED, INDEX_CLEANUP ON, TRUNCATE false) on
// it. SKIP_LOCKED makes a client skip the round when another client or
// autovacuum is already vacuuming the table; TRUNCATE false keeps the
// vacuum from taking the exclusive lock that shrinking the file needs, so
// claims never wait for it. VACUUM only takes a lock that lets reads and
// writes go on.
//
// A claim takes the first pending jobs of a queue in order. Through the
// pending index that costs the jobs it takes; but when the planner expects
// a queue to hold a handful of pending jobs it may read all of them and
// sort them instead, for every claim: on a table never analyzed (fresh,
// filled faster than autovacuum comes round) or last analyzed when the
// queue was empty, with a backlog of 300,000 jobs a claim took 165 ms in
// place of 3. So every five rounds Maintain compares, for the queues with
// at least 1,000 pending jobs by the counts it keeps, the planner's
// estimate with the count, and when the estimate is ten times too low runs
// ANALYZE (SKIP_LOCKED) on the table (at most once in ten seconds).
//
// Once a second, too, Maintain folds the log of count changes that the
// table's triggers append to into the counts table (one client at a time;
// the others skip the round), and every ten seconds vacuums the log if it
// folded anything since.
//
// Only the table's owner (or a superuser) may vacuum or analyze it. For
// any other user Maintain logs one warning and does neither, but still
// folds the counts; [WithoutVacuum] turns both off altogether.
func (d *Driver) Maintain(ctx context.Context, logger *slog.Logger) {
	if d.err != nil {
		return
	}
	ticker := time.NewTicker(d.vacuum.every)
	defer ticker.Stop()
	v := &vacuumer{d: d, logger: logger, off: d.vacuum.off}
	foldWarned := false
	for round := 1; ; round++ {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		n, err := d.foldCounts(ctx)
		if err != nil && ctx.Err() == nil && !foldWarned {
			foldWarned = true
			logger.Warn("sluice: folding the jobs table's counts failed; will try again", "table", d.Table(), "error", err)
		}
		v.folded += n
		v.round(ctx, round%logVacuumRounds == 0, round%analyzeCheckRounds == 0)
	}
}

// logVacuumRounds is how many rounds of Maintain pass between vacuums of
// the count log.
const logVacuumRounds = 10

// vacuumer is the vacuuming part of [Driver.Maintain].
type vacuumer struct {
	d      *Driver
	logger *slog.Logger
	// off is set when vacuuming is turned off, or not allowed.
	off           bool
	known, warned bool
	// folded is how many count log rows were folded since the log was
	// last vacuumed.
	folded int64
	// analyzed is when the client last analyzed the jobs table.
	analyzed time.Time
}

// round vacuums the jobs table if it is due, and the count log too if
// logDue and anything was folded; if statsDue, it analyzes the jobs table
// if the planner misjudges its pending jobs.
func (v *vacuumer) round(ctx context.Context, logDue, statsDue bool) {
	if v.off {
		return
	}
	if !v.known {
		// Until the question is answered (the database may be down, or
		// the table not migrated yet), ask again each round.
		may, err := v.d.mayVacuum(ctx, v.logger)
		if err != nil {
			if ctx.Err() == nil && !v.warned {
				v.warned = true
				v.logger.Warn("sluice: cannot tell yet whether the jobs table may be vacuumed; will ask again",
					"table", v.d.Table(), "error", err)
			}
			return
		}
		if !may {
			v.off = true
			return
		}
		v.known = true
	}
	if err := v.d.vacuumIfDue(ctx, v.logger); err != nil && ctx.Err() == nil {
		v.logger.Warn("sluice: vacuuming the jobs table failed", "table", v.d.Table(), "error", err)
	}
	if statsDue && time.Since(v.analyzed) >= analyzeAtMostEvery {
		analyzed, err := v.d.analyzeIfMisjudged(ctx, v.logger)
		if err != nil && ctx.Err() == nil {
			v.logger.Warn("sluice: analyzing the jobs table failed", "table", v.d.Table(), "error", err)
		}
		if analyzed || err != nil {
			v.analyzed = time.Now()
		}
	}
	if logDue && v.folded > 0 {
		if _, err := v.d.pool.Exec(ctx, "VACUUM (SKIP_LOCKED) "+v.d.countLogTable()); err != nil {
			if ctx.Err() == nil {
				v.logger.Warn("sluice: vacuuming the count log failed", "table", v.d.countLogTable(), "error", err)
			}
			return
		}
		v.folded = 0
	}
}

// mayVacuum reports whether the current user may vacuum the jobs table,
// logging why not when it may not.
func (d *Driver) mayVacuum(ctx context.Context, logger *slog.Logger) (bool, error) {
	var owner bool
	err := d.pool.QueryRow(ctx, `SELECT pg_has_role(c.relowner, 'USAGE') FROM pg_class AS c
WHERE c.oid = $1::regclass`, d.Table()).Scan(&owner)
	if err != nil {
		return false, err
	}
	if !owner {
		logger.Warn("sluice: the database user does not own the jobs table, so the client cannot vacuum it; "+
			"make sure autovacuum keeps up, or pass pgxdriver.WithoutVacuum to silence this",
			"table", d.Table())
	}
	return owner, nil
}

// vacuumIfDue vacuums the jobs table if its dead tuples call for it.
func (d *Driver) vacuumIfDue(ctx context.Context, logger *slog.Logger) error {
	var dead, live int64
	err := d.pool.QueryRow(ctx, `SELECT pg_stat_get_dead_tuples(c.oid), pg_stat_get_live_tuples(c.oid)
FROM pg_class AS c WHERE c.oid = $1::regclass`, d.Table()).Scan(&dead, &live)
	if err != nil {
		return wrapErr(ctx, "maintain", err)
	}
	if !d.vacuum.due(dead, live) {
		return nil
	}
	vctx, cancel := context.WithTimeout(ctx, vacuumTimeout)
	defer cancel()
	start := time.Now()
	if _, err := d.pool.Exec(vctx, "VACUUM (SKIP_LOCKED, INDEX_CLEANUP ON, TRUNCATE false) "+d.Table()); err != nil {
		return wrapErr(ctx, "vacuum", err)
	}
	logger.Debug("sluice: vacuumed the jobs table", "table", d.Table(), "dead_tuples", dead,
		"live_tuples", live, "took", time.Since(start))
	return nil
}

// analyzeIfMisjudged analyzes the jobs table when, for a queue with at
// least analyzeMinPending pending jobs by the counts, the planner expects
// analyzeMisestimate times fewer; it reports whether it did.
func (d *Driver) analyzeIfMisjudged(ctx context.Context, logger *slog.Logger) (bool, error) {
	rows, err := d.pool.Query(ctx, `SELECT queue, sum(n)::bigint FROM `+d.countsTable()+`
WHERE status = 'pending' GROUP BY queue HAVING sum(n) >= $1 ORDER BY 2 DESC LIMIT 10`, analyzeMinPending)
	if err != nil {
		return false, wrapErr(ctx, "maintain", err)
	}
	var queue string
	var pending int64
	counts := map[string]int64{}
	if _, err := pgx.ForEachRow(rows, []any{&queue, &pending}, func() error {
		counts[queue] = pending
		return nil
	}); err != nil {
		return false, wrapErr(ctx, "maintain", err)
	}
	for queue, pending := range counts {
		var plan []byte
		err := d.pool.QueryRow(ctx, `EXPLAIN (FORMAT JSON) SELECT FROM `+d.Table()+
			` WHERE status = 'pending' AND queue = $1`, queue).Scan(&plan)
		if err != nil {
			return false, wrapErr(ctx, "maintain", err)
		}
		var explained []struct {
			Plan struct {
				Rows float64 `json:"Plan Rows"`
			}
		}
		if err := json.Unmarshal(plan, &explained); err != nil || len(explained) != 1 {
			return false, fmt.Errorf("pgxdriver: maintain: reading the planner's estimate: %w (%.200s)", err, plan)
		}
		if expected := explained[0].Plan.Rows; expected*analyzeMisestimate < float64(pending) {
			start := time.Now()
			if _, err := d.pool.Exec(ctx, "ANALYZE (SKIP_LOCKED) "+d.Table()); err != nil {
				return false, wrapErr(ctx, "analyze", err)
			}
			logger.Debug("sluice: analyzed the jobs table, whose statistics expected too few pending jobs",
				"table", d.Table(), "queue", queue, "pending", pending, "expected", expected, "took", time.Since(start))
			return true, nil
		}
	}
	return false, nil
}

var _ driver.Maintainer = (*Driver)(nil)
