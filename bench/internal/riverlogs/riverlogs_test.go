package riverlogs

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/bench/internal/childtest"
	"github.com/sluicehq/sluice/bench/internal/riverpg"
)

// TestLoggedKeepsOneLinePerJob works a few jobs with Logged on and reads
// each job's kept log from its row.
func TestLoggedKeepsOneLinePerJob(t *testing.T) {
	t.Parallel()
	const jobs = 25
	spec := childtest.Work(t, riverpg.Factory(Logged), "pg", jobs)
	if got := keptLines(t, spec.DB, spec.Schema); got != jobs {
		t.Errorf("%d jobs keep their log line, want %d", got, jobs)
	}
}

// keptLines counts the jobs of schema whose metadata holds one riverlog
// attempt whose log is the benchmark's one line for that job.
func keptLines(t *testing.T, url, schema string) int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	err = conn.QueryRow(t.Context(), fmt.Sprintf(`SELECT count(*) FROM %s.river_job
		WHERE state = 'completed' AND jsonb_array_length(metadata->'river:log') = 1
		AND metadata->'river:log'->0->>'log' LIKE '%%"msg":"worked","n":' || (args->>'n') || '}%%'`,
		pgx.Identifier{schema}.Sanitize())).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
