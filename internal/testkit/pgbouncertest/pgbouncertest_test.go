package pgbouncertest_test

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/dbtest"
	"github.com/sluicehq/sluice/internal/testkit/pgbouncertest"
)

// TestTransactionPooling starts a PgBouncer with one server connection and
// reaches the server through it from two client connections at once: both
// are served by the same backend, and SHOW POOLS counts one server
// connection.
func TestTransactionPooling(t *testing.T) {
	t.Parallel()
	b := pgbouncertest.Start(t, pgbouncertest.Options{PoolSize: 1})
	url := b.URL(t, dbtest.URL(t), "default_query_exec_mode", "cache_describe")
	var pids [2]uint32
	for i := range pids {
		conn, err := pgx.Connect(t.Context(), url)
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close(context.Background()) })
		require.NoError(t, conn.QueryRow(t.Context(), "SELECT pg_backend_pid() + $1", 0).Scan(&pids[i]))
		require.NotEqual(t, conn.PgConn().PID(), pids[i], "the client's key is PgBouncer's, not the backend's")
	}
	require.Equal(t, pids[0], pids[1], "one server connection serves both clients")
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	stats, err := b.Stats(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, stats[cfg.Database].Servers(), "%+v", stats)
}

// envChild marks the runs of this test binary that TestMissingBinary
// starts, with no PgBouncer to find.
const envChild = "PGBOUNCERTEST_CHILD"

// TestMissingBinary runs this binary's twin with no PgBouncer: its test
// needing one is skipped, and fails under SLUICE_REQUIRE_POSTGRES=1, as
// in CI.
func TestMissingBinary(t *testing.T) {
	t.Parallel()
	if os.Getenv(envChild) == "1" {
		return // the child's own run of this test
	}
	for _, require1 := range []bool{false, true} {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run", "^TestNeedsBinary$", "-test.v")
		cmd.Env = append(os.Environ(), envChild+"=1", pgbouncertest.EnvBinary+"=/nonexistent/pgbouncer",
			dbtest.EnvRequire+"=0")
		if require1 {
			cmd.Env = append(cmd.Env, dbtest.EnvRequire+"=1")
		}
		out, err := cmd.CombinedOutput()
		require.Contains(t, string(out), "no PgBouncer for this test", "%s", out)
		if require1 {
			require.Error(t, err, "%s", out)
			require.Contains(t, string(out), "--- FAIL: TestNeedsBinary", "%s", out)
		} else {
			require.NoError(t, err, "%s", out)
			require.Contains(t, string(out), "--- SKIP: TestNeedsBinary", "%s", out)
		}
	}
}

// TestNeedsBinary needs a PgBouncer in the child runs of
// TestMissingBinary; elsewhere it does nothing.
func TestNeedsBinary(t *testing.T) {
	if os.Getenv(envChild) != "1" {
		return
	}
	pgbouncertest.Binary(t)
}
