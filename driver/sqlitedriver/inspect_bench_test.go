package sqlitedriver_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/clientbench"
)

// BenchmarkInspect measures List and Stats on a table of a million jobs
// (see clientbench.InspectMix). Figures are recorded in
// docs/performance.md.
func BenchmarkInspect(b *testing.B) {
	d, db := benchDriver(b)
	n := clientbench.InspectRows()
	nowMs := time.Now().UnixMilli()
	spacing := clientbench.InspectSpacing.Milliseconds()
	_, err := db.Exec(`WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < ?1 - 1),
s AS (
	SELECT i, ?2 - (?1 - i) * ?3 AS ms,
		CASE WHEN i % 100 < 90 THEN 'completed' WHEN i % 100 < 94 THEN 'failed'
			WHEN i % 100 < 95 THEN 'cancelled' WHEN i % 100 < 99 THEN 'pending'
			ELSE 'processing' END AS status
	FROM seq
)
INSERT INTO sluice_jobs (id, topic, queue, priority, payload, status, attempt, max_retries,
	run_at, created_at, attempted_at, finalized_at, locked_until, locked_by)
SELECT printf('%08x-%04x-7%03x-8%03x-%012x', ms >> 16, ms & 65535, i & 4095, (i >> 12) & 4095, i),
	'topic_' || (i % 10), 'q' || (i % 3), 0, '{"n": 1}', status,
	CASE WHEN status = 'pending' THEN 0 ELSE 1 END, 3,
	ms * 1000, ms * 1000,
	CASE WHEN status = 'pending' THEN NULL ELSE (ms + 1000) * 1000 END,
	CASE WHEN status IN ('pending', 'processing') THEN NULL ELSE (ms + 1000 + i % 1000) * 1000 END,
	CASE WHEN status = 'processing' THEN (?2 + 3600000) * 1000 END,
	CASE WHEN status = 'processing' THEN 'bench' END
FROM s`, n, nowMs, spacing)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := db.Exec("ANALYZE"); err != nil {
		b.Fatal(err)
	}
	d.CheckChangesPlans(b, time.Now().Add(-time.Minute))
	clientbench.Inspect(b, d)
}
