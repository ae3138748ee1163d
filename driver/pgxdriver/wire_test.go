package pgxdriver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver/pgxdriver"
)

// TestWireReadingReadsWhatScanReads stores jobs with every column set and
// unset, and odd values where the wire format has corners (times before
// 2000 and to the microsecond, negative numbers, empty and non-ASCII
// arrays, an infinite time), and checks that reading them from their wire
// format gives exactly the jobs pgx's Scan gives, in each mode of
// executing statements the driver may be used with.
func TestWireReadingReadsWhatScanReads(t *testing.T) {
	ctx := context.Background()
	d, pool, schema := newDriver(t)
	table := pgx.Identifier{schema, "sluice_jobs"}.Sanitize()
	_, err := pool.Exec(ctx, `INSERT INTO `+table+` (id, topic, queue, priority, payload, status, attempt, max_retries,
	run_at, created_at, attempted_at, finalized_at, locked_until, locked_by, unique_key, errors, result,
	attempted_by, progress, tags, metadata, logs, logged, depends_on, wait_policy, wait_run_at, key, sequence,
	group_id, task, callback_of) VALUES
	('00000000-0000-7000-8000-000000000001', 'work', 'default', 0, '{}', 'pending', 0, 0,
	 '2026-11-29 10:00:00.123456+00', '2026-11-29 09:59:59+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	 NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
	('00000000-0000-7000-8000-000000000002', 'wörk', 'q-2', -7, '{"n": [1, 2.5, "x"], "s": "é\n"}', 'processing', 3, 25,
	 '1999-12-31 23:59:59.999999+00', '1970-01-01 00:00:00+00', '2026-11-29 10:00:01.000001+00', NULL,
	 '2026-11-29 10:01:00+00', 'client-a', 'uk-1', '[{"attempt": 1, "error": "boom", "at": "2026-11-29T10:00:00Z"}]',
	 '{"ok": true}', 'client-a', '{"percent": 40, "message": "half"}', ARRAY['a', 'ünï', ''], '{"customer": 42}',
	 NULL, NULL, NULL, NULL, NULL, 'customer-42', 'hold', '00000000-0000-7000-8000-0000000000aa', 'resize-1',
	 '00000000-0000-7000-8000-0000000000bb'),
	('00000000-0000-7000-8000-000000000003', 'work', 'default', 2147483647, '[]', 'completed', 1, 0,
	 '2026-11-29 10:00:00+00', '2026-11-29 10:00:00+00', '2026-11-29 10:00:00+00', '2026-11-29 10:00:02+00',
	 NULL, NULL, NULL, NULL, 'null', 'client-b', NULL, '{}', NULL, NULL, NULL, '["00000000-0000-7000-8000-000000000001"]',
	 'cancel', '2026-11-29 12:00:00+00', NULL, NULL, NULL, NULL, NULL),
	('00000000-0000-7000-8000-000000000004', 'work', 'default', -2147483648, '"text"', 'pending', 0, 0,
	 '2026-11-29 10:00:00+00', '2026-11-29 10:00:00+00', NULL, 'infinity', NULL, NULL, NULL, NULL, NULL,
	 NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`)
	require.NoError(t, err)

	modes := map[string]pgx.QueryExecMode{
		"cache_statement": pgx.QueryExecModeCacheStatement,
		"describe_exec":   pgx.QueryExecModeDescribeExec,
		"exec":            pgx.QueryExecModeExec,
		"simple_protocol": pgx.QueryExecModeSimpleProtocol,
	}
	for name, mode := range modes {
		t.Run(name, func(t *testing.T) {
			cfg := pool.Config().Copy()
			cfg.ConnConfig.DefaultQueryExecMode = mode
			p, err := pgxpool.NewWithConfig(ctx, cfg)
			require.NoError(t, err)
			t.Cleanup(p.Close)
			sql := d.AllJobsQuery()
			scanned, wired, err := pgxdriver.ReadJobs(ctx, p, sql, false)
			require.NoError(t, err)
			require.Zero(t, wired)
			require.Len(t, scanned, 4)
			read, wired, err := pgxdriver.ReadJobs(ctx, p, sql, true)
			require.NoError(t, err)
			require.Equal(t, scanned, read)
			if mode == pgx.QueryExecModeCacheStatement || mode == pgx.QueryExecModeDescribeExec {
				// Every row but the one with an infinite time, which
				// goes through Scan.
				require.Equal(t, 3, wired, "rows read from their wire format")
			}
		})
	}

	// A NULL where a job cannot have one is refused the same way.
	bad := strings.Replace(d.AllJobsQuery(), "j.id,", "NULL::uuid AS id,", 1)
	_, _, errScan := pgxdriver.ReadJobs(ctx, pool, bad, false)
	_, _, errWire := pgxdriver.ReadJobs(ctx, pool, bad, true)
	require.Error(t, errScan)
	require.Error(t, errWire)
	require.Equal(t, errScan.Error(), errWire.Error())
}

// TestWireReadingOfAFailedQuery reads the rows of a query that failed
// before it returned any (as a batch hands a claim's callback rows whose
// statement never ran): the error comes back, nothing panics.
func TestWireReadingOfAFailedQuery(t *testing.T) {
	d, pool, _ := newDriver(t)
	conn, err := pool.Acquire(context.Background())
	require.NoError(t, err)
	defer conn.Release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, wire := range []bool{false, true} {
		rows, err := conn.Conn().Query(ctx, d.AllJobsQuery())
		require.Error(t, err)
		_, _, err = pgxdriver.ReadRows(rows, wire)
		require.ErrorIs(t, err, context.Canceled)
	}
}
