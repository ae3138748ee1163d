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
// the table is analyzed, the least time between two analyzes by one
// client, and between two when the last left the estimate as far off (it
// was skipped, as something else held the table, or the statistics cannot
// tell), and how long an analyze may take.
const (
	analyzeCheckRounds = 5
	analyzeMinPending  = 1_000
	analyzeMisestimate = 10
	analyzeAtMostEvery = 10 * time.Second
	analyzeUnfixed     = time.Minute
	analyzeTimeout     = time.Minute
)

// analyzeColumns are the columns Maintain analyzes: those the claim's
// plan depends on. Autovacuum analyzes them all, the large JSON ones too.
const analyzeColumns = "(status, queue, topic, priority, run_at)"

// vacuumPolicy is when [Driver.Maintain] vacuums the jobs table.
type vacuumPolicy struct {
	off     bool
	every   time.Duration
	minDead int64
	perLive float64
	// analyzeEvery and analyzeUnfixed are analyzeAtMostEvery and
	// analyzeUnfixed (tests shorten them).
	analyzeEvery, analyzeUnfixed time.Duration
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
// ANALYZE (SKIP_LOCKED) on the columns claims select and order by (at most
// once in ten seconds; once a minute while an analyze leaves the estimate
// as far off, as when autovacuum held the table).
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
	// nextAnalyze is when the client may next analyze the jobs table.
	nextAnalyze   time.Time
	analyzeWarned bool
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
	if statsDue && !time.Now().Before(v.nextAnalyze) {
		analyzed, fixed, err := v.d.analyzeIfMisjudged(ctx, v.logger)
		switch {
		case err != nil:
			if ctx.Err() == nil && !v.analyzeWarned {
				v.analyzeWarned = true
				v.logger.Warn("sluice: analyzing the jobs table failed; will try again", "table", v.d.Table(), "error", err)
			}
			v.nextAnalyze = time.Now().Add(v.d.vacuum.analyzeUnfixed)
		case analyzed && !fixed:
			v.analyzeWarned = false
			v.nextAnalyze = time.Now().Add(v.d.vacuum.analyzeUnfixed)
		case analyzed:
			v.analyzeWarned = false
			v.nextAnalyze = time.Now().Add(v.d.vacuum.analyzeEvery)
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
// analyzeMisestimate times fewer; it reports whether it did, and whether
// the estimate was then right.
func (d *Driver) analyzeIfMisjudged(ctx context.Context, logger *slog.Logger) (analyzed, fixed bool, err error) {
	rows, err := d.pool.Query(ctx, `SELECT queue, sum(n)::bigint FROM `+d.countsTable()+`
WHERE status = 'pending' GROUP BY queue HAVING sum(n) >= $1 ORDER BY 2 DESC LIMIT 10`, analyzeMinPending)
	if err != nil {
		return false, false, wrapErr(ctx, "maintain", err)
	}
	var queue string
	var pending int64
	counts := map[string]int64{}
	if _, err := pgx.ForEachRow(rows, []any{&queue, &pending}, func() error {
		counts[queue] = pending
		return nil
	}); err != nil {
		return false, false, wrapErr(ctx, "maintain", err)
	}
	for queue, pending := range counts {
		expected, err := d.expectedPending(ctx, queue)
		if err != nil {
			return false, false, err
		}
		if expected*analyzeMisestimate >= float64(pending) {
			continue
		}
		start := time.Now()
		actx, cancel := context.WithTimeout(ctx, analyzeTimeout)
		_, err = d.pool.Exec(actx, "ANALYZE (SKIP_LOCKED) "+d.Table()+" "+analyzeColumns)
		cancel()
		if err != nil {
			return false, false, wrapErr(ctx, "analyze", err)
		}
		after, err := d.expectedPending(ctx, queue)
		if err != nil {
			return true, false, err
		}
		logger.Debug("sluice: analyzed the jobs table, whose statistics expected too few pending jobs",
			"table", d.Table(), "queue", queue, "pending", pending, "expected", expected, "expected_after", after,
			"took", time.Since(start))
		return true, after*analyzeMisestimate >= float64(pending), nil
	}
	return false, true, nil
}

// expectedPending returns how many pending jobs of queue the planner
// expects.
func (d *Driver) expectedPending(ctx context.Context, queue string) (float64, error) {
	var plan []byte
	err := d.pool.QueryRow(ctx, `EXPLAIN (FORMAT JSON) SELECT FROM `+d.Table()+
		` WHERE status = 'pending' AND queue = $1`, queue).Scan(&plan)
	if err != nil {
		return 0, wrapErr(ctx, "maintain", err)
	}
	var explained []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		}
	}
	if err := json.Unmarshal(plan, &explained); err != nil {
		return 0, fmt.Errorf("pgxdriver: maintain: reading the planner's estimate: %w (%.200s)", err, plan)
	}
	if len(explained) != 1 {
		return 0, fmt.Errorf("pgxdriver: maintain: reading the planner's estimate: %d plans (%.200s)", len(explained), plan)
	}
	return explained[0].Plan.Rows, nil
}

var _ driver.Maintainer = (*Driver)(nil)
