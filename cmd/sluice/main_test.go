package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/pgxdriver"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
	"github.com/sluicehq/sluice/internal/testkit/dbtest"
	"github.com/sluicehq/sluice/internal/testkit/sqlitetest"
)

// bin is the sluice binary the tests run, built once by TestMain.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-cmd-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "sluice")
	build := exec.Command("go", "build", "-race", "-o", bin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build sluice:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// db is one database the command runs against, with a library client over
// it to set up jobs the command cannot make (completed, failed).
type db struct {
	name string
	// flags select the database (and schema) on the command line.
	flags []string
	// lib is an insert-only client over the same database, migrated.
	lib libClient
	// startFailing starts a client whose worker of the topic "fail" fails
	// every job without retries; the returned function stops it.
	startFailing func() (stop func())
}

// libClient is what the tests call on a library client of either driver.
type libClient interface {
	Get(ctx context.Context, id string) (*sluice.JobRow, error)
	EnqueueMany(ctx context.Context, params []sluice.EnqueueParams) ([]sluice.EnqueueResult, error)
	QueueStates(ctx context.Context) ([]*sluice.QueueState, error)
	StoredLimits(ctx context.Context) ([]*sluice.Limits, error)
	EnqueueWorkflow(ctx context.Context, w *sluice.Workflow) (*sluice.WorkflowResult, error)
	EnqueueBatch(ctx context.Context, b *sluice.Batch) (*sluice.BatchResult, error)
	GetWorkflow(ctx context.Context, id string) (*sluice.Group, error)
	GetBatch(ctx context.Context, id string) (*sluice.Group, error)
}

// failArgs are the arguments of jobs the failing worker fails.
type failArgs struct{}

func (failArgs) Topic() string { return "fail" }

// newLib returns an insert-only client over drv, which it migrates.
func newLib[TTx any](t *testing.T, drv driver.Driver[TTx]) libClient {
	t.Helper()
	c, err := sluice.NewClient(drv, &sluice.Config{Queues: map[string]sluice.QueueConfig{
		sluice.QueueDefault: {}, "bulk": {}}})
	require.NoError(t, err)
	return c
}

// startFailing starts a client over drv whose worker fails every job of
// the topic "fail" without retrying it.
func startFailing[TTx any](t *testing.T, drv driver.Driver[TTx]) func() {
	t.Helper()
	workers := sluice.NewWorkers()
	sluice.AddWorker(workers, sluice.WorkFunc(func(context.Context, *sluice.Job[failArgs]) error {
		return errors.New("always fails")
	}))
	c, err := sluice.NewClient(drv, &sluice.Config{Workers: workers, MaxRetries: sluice.NoRetries,
		PollInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	return func() { require.NoError(t, c.Stop(context.Background())) }
}

// result is one run of the command.
type result struct {
	code           int
	stdout, stderr string
}

// sluiceCmd runs the command with args, the database's flags first, and
// stdin as its input; the environment has no database variables unless env
// adds them.
func (d *db) run(t *testing.T, args ...string) result {
	t.Helper()
	return runBin(t, nil, "", append(append([]string{}, d.flags...), args...)...)
}

// runBin runs the binary with args, stdin and the extra environment env.
func runBin(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Env = append(cleanEnv(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// cleanEnv is the test's environment without the database variables the
// command reads.
// The command is built with the race detector, which sleeps a second
// before a process exits (for reports of other goroutines to arrive):
// GORACE's atexit_sleep_ms=0 saves the tests that second per run. A race
// still fails the run, with the detector's exit code.
func cleanEnv() []string {
	var env []string
	gorace := "atexit_sleep_ms=0"
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "SLUICE_DATABASE_URL", "DATABASE_URL", "SLUICE_UI_TOKEN":
		case "GORACE":
			gorace = v + " " + gorace
		default:
			env = append(env, kv)
		}
	}
	return append(env, "GORACE="+gorace)
}

// ok requires the run to have succeeded and returns its stdout.
func (r result) ok(t *testing.T) string {
	t.Helper()
	require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	return r.stdout
}

// fails requires the run to have exited with code, saying on stderr
// something containing msg.
func (r result) fails(t *testing.T, code int, msg string) {
	t.Helper()
	require.Equal(t, code, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	require.Contains(t, r.stderr, msg)
}

// decode parses JSON output into a value of type T.
func decode[T any](t *testing.T, out string) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	return v
}

// eachDB runs fn against a fresh SQLite file and a fresh Postgres schema.
// With migrated false the database is left unmigrated (the SQLite file
// does not exist), and d.lib and d.startFailing are nil.
func eachDB(t *testing.T, migrated bool, fn func(t *testing.T, d *db)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "jobs.db")
		if migrated {
			path = sqlitetest.Path(t)
		}
		d := &db{name: "sqlite", flags: []string{"--database-url", path}}
		if migrated {
			sqlDB, err := sqlitedriver.Open(path)
			require.NoError(t, err)
			t.Cleanup(func() { _ = sqlDB.Close() })
			drv := sqlitedriver.New(sqlDB)
			d.lib = newLib(t, drv)
			d.startFailing = func() func() { return startFailing(t, drv) }
		}
		fn(t, d)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		pool, schema := dbtest.Pool(t)
		d := &db{name: "postgres", flags: []string{"--database-url", dbtest.URL(t), "--schema", schema}}
		if migrated {
			drv := pgxdriver.New(pool, pgxdriver.WithSchema(schema))
			d.lib = newLib(t, drv)
			d.startFailing = func() func() { return startFailing(t, drv) }
		}
		fn(t, d)
	})
}
