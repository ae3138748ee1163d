package pgxdriver_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/clientbench"
)

// BenchmarkInspect measures List and Stats on a table of a million jobs
// (see clientbench.InspectMix). Figures are recorded in
// docs/performance.md.
func BenchmarkInspect(b *testing.B) {
	d, pool, _ := newDriver(b)
	n := clientbench.InspectRows()
	nowMs := time.Now().UnixMilli()
	spacing := clientbench.InspectSpacing.Milliseconds()
	_, err := pool.Exec(b.Context(), `WITH s AS (
	SELECT i, $2::bigint - ($1::bigint - i) * $3::bigint AS ms,
		CASE WHEN i % 100 < 90 THEN 'completed' WHEN i % 100 < 94 THEN 'failed'
			WHEN i % 100 < 95 THEN 'cancelled' WHEN i % 100 < 99 THEN 'pending'
			ELSE 'processing' END AS status
	FROM generate_series(0, $1::bigint - 1) AS i
)
INSERT INTO `+d.Table()+` (id, topic, queue, priority, payload, status, attempt, max_retries,
	run_at, created_at, attempted_at, finalized_at, locked_until, locked_by)
SELECT (lpad(to_hex(ms >> 16), 8, '0') || '-' || lpad(to_hex(ms & 65535), 4, '0') || '-7'
		|| lpad(to_hex(i & 4095), 3, '0') || '-8' || lpad(to_hex((i >> 12) & 4095), 3, '0')
		|| '-' || lpad(to_hex(i), 12, '0'))::uuid,
	'topic_' || (i % 10), 'q' || (i % 3), 0, '{"n": 1}', status,
	CASE WHEN status = 'pending' THEN 0 ELSE 1 END, 3,
	to_timestamp(ms / 1000.0), to_timestamp(ms / 1000.0),
	CASE WHEN status = 'pending' THEN NULL ELSE to_timestamp((ms + 1000) / 1000.0) END,
	CASE WHEN status IN ('pending', 'processing') THEN NULL
		ELSE to_timestamp((ms + 1000 + i % 1000) / 1000.0) END,
	CASE WHEN status = 'processing' THEN now() + interval '1 hour' END,
	CASE WHEN status = 'processing' THEN 'bench' END
FROM s`, n, nowMs, spacing)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(b.Context(), "VACUUM ANALYZE "+d.Table()); err != nil {
		b.Fatal(err)
	}
	var ids []string
	if err := pool.QueryRow(b.Context(), "SELECT array_agg(id::text) FROM (SELECT id FROM "+d.Table()+
		" WHERE locked_until IS NOT NULL LIMIT 100) AS r").Scan(&ids); err != nil {
		b.Fatal(err)
	}
	requireChangesPlans(b, d, pool, ids, time.Now().Add(-time.Minute))
	clientbench.Inspect(b, d)
}
