package sqlitedriver_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/clientbench"
)

// Benchmarks of keys, limits per key, sequences and fair sharing, each
// against the plain burn-down of the same backlog, run side by side.
// Figures are recorded in docs/performance.md.

// keyedBacklog inserts n pending jobs of the benchmark topic with IDs in
// the order of i, the i-th with key prefix||(i % keys) (none when keys is
// 0, prefix itself when 1) and in its key's sequence (policy 'hold') when
// sequenced, due from at on in i's order.
func keyedBacklog(b *testing.B, db *sql.DB, n, keys int, prefix string, sequenced bool, at time.Time) {
	b.Helper()
	seq := any(nil)
	if sequenced {
		seq = "hold"
	}
	us := at.UnixMicro()
	_, err := db.Exec(`WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?1)
		INSERT INTO sluice_jobs (id, topic, queue, priority, payload, status, attempt, max_retries, run_at, created_at,
			key, sequence)
		SELECT printf('0190f5d2-%04x-7000-8000-%012x', ?2, i), 'bench', 'default', 0, '{"n":1}', 'pending', 0, 3,
			?3 + i, ?3, CASE WHEN ?4 = 1 THEN ?5 WHEN ?4 > 1 THEN ?5 || (i % ?4) END, ?6
		FROM s`, n, (us/10_000)%(1<<16), us, keys, prefix, seq)
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkWorkBacklogKeysMaxRunning works 100k jobs over 10,000 keys with
// at most one job of each key running at once, against the same jobs
// without keys.
func BenchmarkWorkBacklogKeysMaxRunning(b *testing.B) {
	keyedVersus(b, 10_000, false, &sluice.KeyLimits{MaxRunning: 1})
}

// BenchmarkWorkBacklogSequences works 100k jobs in the sequences of 1,000
// keys, against the same jobs without keys.
func BenchmarkWorkBacklogSequences(b *testing.B) {
	keyedVersus(b, 1_000, true, &sluice.KeyLimits{Sequence: sluice.SequenceHold})
}

// BenchmarkWorkBacklogKeysUnused works 100k jobs over 10,000 keys with no
// limits stored, against the same jobs without keys.
func BenchmarkWorkBacklogKeysUnused(b *testing.B) { keyedVersus(b, 10_000, false, nil) }

func keyedVersus(b *testing.B, keys int, sequenced bool, limits *sluice.KeyLimits) {
	n := clientbench.Size(100_000)
	for b.Loop() {
		clientbench.Versus(b, func(variant bool) (driver.Driver[*sql.Tx], func()) {
			d, db := benchDriver(b)
			at := time.Now().Add(-time.Minute)
			if !variant {
				keyedBacklog(b, db, n, 0, "", false, at)
				return d, func() {}
			}
			keyedBacklog(b, db, n, keys, "k", sequenced, at)
			if limits != nil {
				clientbench.SetKeyLimits(b, d, sluice.QueueScope(sluice.QueueDefault), *limits)
			}
			return d, func() {}
		}, n, 3, clientbench.BurnDownOptions{})
	}
}

// BenchmarkWorkBacklogFairShare works a backlog of 200k jobs of one tenant
// followed by 100 of another, in FIFO order and in a fair queue.
func BenchmarkWorkBacklogFairShare(b *testing.B) {
	big, small := clientbench.Size(200_000), 100
	for b.Loop() {
		clientbench.FairShare(b, func(fair bool) (driver.Driver[*sql.Tx], func()) {
			d, db := benchDriver(b)
			at := time.Now().Add(-time.Minute)
			keyedBacklog(b, db, big, 1, "big", false, at)
			keyedBacklog(b, db, small, 1, "small", false, at.Add(time.Second))
			if fair {
				clientbench.SetKeyLimits(b, d, sluice.QueueScope(sluice.QueueDefault), sluice.KeyLimits{Fair: true})
			}
			return d, func() {}
		}, big, small, 0)
	}
}
