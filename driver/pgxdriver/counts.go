package pgxdriver

import (
	"context"
	"hash/fnv"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/filtersql"
)

// The counts of jobs by status, queue and topic live in two tables that
// triggers keep (migration 0005): the counts table, and a log of changes
// not yet folded into it. See the migration for why.

// countsTable returns the qualified, quoted counts table.
func (d *Driver) countsTable() string { return d.ident(d.table + "_counts") }

// countLogTable returns the qualified, quoted log of count changes.
func (d *Driver) countLogTable() string { return d.ident(d.table + "_count_log") }

// tally reads the counts of the jobs f selects, which must be
// filtersql.Counted, in the snapshot of db's next statement.
func (d *Driver) tally(ctx context.Context, db dbtx, f *driver.JobFilter) ([]driver.JobCount, error) {
	sql, args := filtersql.Tally(dialect, f, d.countsTable(), d.countLogTable())
	return queryCounts(ctx, db, sql, args)
}

// queryCounts runs sql, which selects status, topic, queue and a count,
// and returns its rows.
func queryCounts(ctx context.Context, db dbtx, sql string, args []any) ([]driver.JobCount, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	var c driver.JobCount
	var counts []driver.JobCount
	_, err = pgx.ForEachRow(rows, []any{&c.Status, &c.Topic, &c.Queue, &c.Count}, func() error {
		counts = append(counts, c)
		return nil
	})
	return counts, err
}

// foldSQL moves the log of count changes into the counts table and
// returns how many log rows it moved. Changes of transactions that have not
// committed stay in the log for the next fold.
const foldSQL = `WITH gone AS (
	DELETE FROM {log} RETURNING status, queue, topic, n
), folded AS (
	INSERT INTO {counts} AS c (status, queue, topic, n)
	SELECT status, queue, topic, sum(n)::bigint FROM gone GROUP BY status, queue, topic
	ON CONFLICT (status, queue, topic) DO UPDATE SET n = c.n + excluded.n
)
SELECT count(*) FROM gone`

// foldCounts folds the log of count changes into the counts table, and
// drops the counts that reached zero, unless another client is folding at
// the moment. It returns how many log rows it folded. The fold commits
// without waiting for its WAL to reach disk: a fold a crash forgets leaves
// its log rows where they were, and the counts as they were, which still
// add up.
func (d *Driver) foldCounts(ctx context.Context) (int64, error) {
	var folded int64
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		var mine bool
		err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1), set_config('synchronous_commit', 'off', true)`,
			d.foldKey()).Scan(&mine, nil)
		if err != nil || !mine {
			return err
		}
		if err := tx.QueryRow(ctx, d.q.fold).Scan(&folded); err != nil || folded == 0 {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM `+d.countsTable()+` WHERE n = 0`)
		return err
	})
	if err != nil {
		return 0, wrapErr(ctx, "fold counts", err)
	}
	return folded, nil
}

// foldKey is the key of the advisory lock a fold holds: a hash of the
// qualified table name.
func (d *Driver) foldKey() int64 {
	h := fnv.New64a()
	h.Write([]byte("sluice fold " + d.ident(d.table)))
	return int64(h.Sum64())
}
