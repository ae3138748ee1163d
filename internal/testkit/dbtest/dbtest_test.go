package dbtest_test

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/dbtest"
)

func TestPoolUsesItsOwnSchema(t *testing.T) {
	t.Parallel()
	pool, schema := dbtest.Pool(t)
	var got string
	require.NoError(t, pool.QueryRow(t.Context(), "SELECT current_schema()").Scan(&got))
	require.Equal(t, schema, got)
	_, err := pool.Exec(t.Context(), "CREATE TABLE t (id int)")
	require.NoError(t, err)
}

// envChild marks the run of this test binary that TestSkipSaysSoOnce
// starts, with no Postgres to find.
const envChild = "DBTEST_SKIP_CHILD"

// TestSkipSaysSoOnce runs this binary's Postgres-less twin: its two
// Postgres tests are skipped, and the binary says so in one line, naming
// the package and how to run them.
func TestSkipSaysSoOnce(t *testing.T) {
	t.Parallel()
	if os.Getenv(envChild) == "1" {
		return // the child's own run of this test
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run", "^TestSkippedTwice$", "-test.v")
	cmd.Env = []string{envChild + "=1", "DOCKER_HOST=unix:///nonexistent/docker.sock", "HOME=" + t.TempDir()}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "stdout: %s\nstderr: %s", out, stderr.String())
	require.Equal(t, 2, strings.Count(string(out), "--- SKIP"), "%s", out)
	var notices []string
	for line := range strings.Lines(stderr.String()) {
		if strings.Contains(line, "Postgres tests skipped") {
			notices = append(notices, line)
		}
	}
	require.Len(t, notices, 1, "one line per binary; stderr: %s", stderr.String())
	require.Contains(t, notices[0], "github.com/sluicehq/sluice/internal/testkit/dbtest: ")
	require.Contains(t, notices[0], dbtest.EnvURL+"=postgres://")
}

// TestSkippedTwice is two Postgres tests of the child run; elsewhere it
// does nothing.
func TestSkippedTwice(t *testing.T) {
	if os.Getenv(envChild) != "1" {
		return
	}
	for _, name := range []string{"first", "second"} {
		t.Run(name, func(t *testing.T) { dbtest.URL(t) })
	}
}
