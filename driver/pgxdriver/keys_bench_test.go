package pgxdriver_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/clientbench"
)

// Benchmarks of keys, limits per key, sequences and fair sharing, each
// against the plain burn-down of the same backlog, run side by side.
// Figures are recorded in docs/performance.md.

// keyedBacklog inserts n pending jobs of the benchmark topic with IDs in
// the order of i, the i-th with key prefix||(i % keys) (none when keys is
// 0) and in its key's sequence (policy 'hold') when sequenced, due from
// at on in i's order (one key: prefix itself); then it analyzes the
// table.
func keyedBacklog(b *testing.B, pool *pgxpool.Pool, n, keys int, prefix string, sequenced bool, at time.Time) {
	b.Helper()
	ctx := context.Background()
	_, err := pool.Exec(ctx, `INSERT INTO sluice_jobs (id, topic, queue, priority, payload, status, attempt, max_retries,
			run_at, created_at, key, sequence)
		SELECT ('0190f5d2-' || $6 || '-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, 'bench', 'default', 0, '{"n":1}',
			'pending', 0, 3, $3::timestamptz + i * interval '1 microsecond', $3::timestamptz,
			CASE WHEN $2 = 1 THEN $4 WHEN $2 > 1 THEN $4 || (i % $2) END, CASE WHEN $5 THEN 'hold' END
		FROM generate_series(1, $1) AS i`, n, keys, at, prefix, sequenced, fmt4(at))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE sluice_jobs`); err != nil {
		b.Fatal(err)
	}
}

// fmt4 returns four hexadecimal digits that grow with t, so that the IDs
// of a later backlog sort after an earlier one's.
func fmt4(t time.Time) string {
	const hex = "0123456789abcdef"
	n := t.UnixMilli() / 10 % (1 << 16)
	return string([]byte{hex[n>>12&15], hex[n>>8&15], hex[n>>4&15], hex[n&15]})
}

// BenchmarkClientKeysMaxRunning works 100k jobs over 10,000 keys with at
// most one job of each key running at once, against the same jobs without
// keys (tunedWorkers workers).
func BenchmarkClientKeysMaxRunning(b *testing.B) {
	keyedVersus(b, 10_000, false, &sluice.KeyLimits{MaxRunning: 1})
}

// BenchmarkClientSequences works 100k jobs in the sequences of 1,000 keys
// (each key's jobs one at a time, in order), against the same jobs
// without keys.
func BenchmarkClientSequences(b *testing.B) {
	keyedVersus(b, 1_000, true, &sluice.KeyLimits{Sequence: sluice.SequenceHold})
}

// BenchmarkClientKeysUnused works 100k jobs over 10,000 keys with no
// limits stored, against the same jobs without keys: what keys cost when
// nothing asks about them.
func BenchmarkClientKeysUnused(b *testing.B) { keyedVersus(b, 10_000, false, nil) }

func keyedVersus(b *testing.B, keys int, sequenced bool, limits *sluice.KeyLimits) {
	n := clientbench.Size(100_000)
	for b.Loop() {
		clientbench.Versus(b, func(variant bool) (driver.Driver[pgx.Tx], func()) {
			d, pool := benchDriver(b)
			at := time.Now().Add(-time.Minute)
			if !variant {
				keyedBacklog(b, pool, n, 0, "", false, at)
				return d, func() {}
			}
			keyedBacklog(b, pool, n, keys, "k", sequenced, at)
			if limits != nil {
				clientbench.SetKeyLimits(b, d, sluice.QueueScope(sluice.QueueDefault), *limits)
			}
			return d, func() {}
		}, n, 3, clientbench.BurnDownOptions{Workers: tunedWorkers})
	}
}

// BenchmarkClientFairShare works a backlog of 200k jobs of one tenant
// followed by 100 of another, in FIFO order and in a fair queue, and
// reports when the small tenant's jobs started and how much of the big
// backlog was done when its last one finished.
func BenchmarkClientFairShare(b *testing.B) {
	big, small := clientbench.Size(200_000), 100
	for b.Loop() {
		clientbench.FairShare(b, func(fair bool) (driver.Driver[pgx.Tx], func()) {
			d, pool := benchDriver(b)
			at := time.Now().Add(-time.Minute)
			keyedBacklog(b, pool, big, 1, "big", false, at)
			keyedBacklog(b, pool, small, 1, "small", false, at.Add(time.Second))
			if fair {
				clientbench.SetKeyLimits(b, d, sluice.QueueScope(sluice.QueueDefault), sluice.KeyLimits{Fair: true})
			}
			return d, func() {}
		}, big, small, tunedWorkers)
	}
}
