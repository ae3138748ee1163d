// Package dbtest gives every Postgres test a database of its own to work in.
//
// Tests use the server named by SLUICE_TEST_DATABASE_URL when it is set.
// Otherwise, when a Docker engine answers, one Postgres container is started
// for the test binary with testcontainers-go. Otherwise the test is skipped
// with a message naming both options, unless SLUICE_REQUIRE_POSTGRES=1, in
// which case it fails: CI sets it, so no Postgres test is skipped there.
// A test binary that skips says so once, in one line that go test ./...
// shows even without -v (see noticeSkipped).
//
// Each test gets a fresh schema, dropped at cleanup, and a pool whose
// connections use it as their search_path, so tests run in parallel and
// leave nothing behind.
package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"
	"github.com/testcontainers/testcontainers-go/wait"
)

// Environment variables the helper reads.
const (
	// EnvURL names the database URL tests use.
	EnvURL = "SLUICE_TEST_DATABASE_URL"
	// EnvRequire, set to 1, makes a missing database a failure.
	EnvRequire = "SLUICE_REQUIRE_POSTGRES"
)

var (
	containerOnce sync.Once
	containerURL  string
	containerErr  error
	// skipOnce makes the skip notice one line per test binary.
	skipOnce sync.Once
)

// URL returns the URL of the Postgres server tests use, or skips t (fails
// it, under SLUICE_REQUIRE_POSTGRES=1) when there is none.
func URL(t testing.TB) string {
	t.Helper()
	if url := os.Getenv(EnvURL); url != "" {
		return url
	}
	containerOnce.Do(func() { containerURL, containerErr = startContainer() })
	if containerErr == nil {
		return containerURL
	}
	msg := fmt.Sprintf("no Postgres for this test: set %s to a database URL "+
		"(e.g. postgres://postgres@127.0.0.1:5432/test), or run a Docker engine "+
		"for testcontainers (%v)", EnvURL, containerErr)
	if os.Getenv(EnvRequire) == "1" {
		t.Fatal(msg)
	}
	skipOnce.Do(noticeSkipped)
	t.Skip(msg)
	return ""
}

// noticeSkipped says that the test binary skips its Postgres tests, and
// how to run them, in one line. go test ./... shows a passing package's
// output only with -v, so without -v the line goes to the terminal
// (/dev/tty) when there is one, where the go command's own lines go;
// otherwise, and with -v, to stderr.
func noticeSkipped() {
	var w io.Writer = os.Stderr
	if !testing.Verbose() {
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			defer tty.Close()
			w = tty
		}
	}
	fmt.Fprintln(w, skipNotice())
}

// skipNotice is the line noticeSkipped writes, naming the package whose
// tests are skipped as go test does.
func skipNotice() string {
	pkg := "this package"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Path != "" {
		pkg = strings.TrimSuffix(bi.Path, ".test")
	}
	return fmt.Sprintf("%s: Postgres tests skipped; run them with %s=postgres://postgres@127.0.0.1:5432/test go test ./... "+
		"or with a Docker engine running", pkg, EnvURL)
}

// startContainer starts one Postgres container for the test binary. It is
// left for testcontainers' reaper to remove when the binary exits.
func startContainer() (string, error) {
	if _, err := testcontainers.NewDockerClientWithOpts(context.Background()); err != nil {
		return "", fmt.Errorf("docker: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := tcpostgres.Run(ctx, "postgres:16-alpine",
		tcpostgres.WithDatabase("test"),
		tcpostgres.WithUsername("postgres"),
		tcpostgres.WithPassword("postgres"),
		testcontainers.WithWaitStrategy(wait.ForLog("database system is ready to accept connections").
			WithOccurrence(2).WithStartupTimeout(time.Minute)),
	)
	if err != nil {
		return "", fmt.Errorf("start postgres container: %w", err)
	}
	return c.ConnectionString(ctx, "sslmode=disable")
}

// Schema creates a fresh schema for t on the server at url and drops it,
// with everything in it, when t ends. It returns the schema's name.
func Schema(t testing.TB, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("dbtest: connect %s: %v", redact(url), err)
	}
	defer conn.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "sluice_test_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("dbtest: create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("dbtest: drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("dbtest: drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// Pool returns a pool on the test server whose connections use a fresh
// schema (see Schema) as their search_path, closed when t ends, and the
// schema's name.
func Pool(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	url := URL(t)
	schema := Schema(t, url)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatalf("dbtest: parse %s: %v", redact(url), err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.MaxConns = 8
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("dbtest: pool: %v", err)
	}
	t.Cleanup(pool.Close) // registered after the schema's, so it runs first
	return pool, schema
}

// redact hides a URL's password in messages.
func redact(url string) string {
	cfg, err := pgx.ParseConfig(url)
	if err != nil || cfg.Password == "" {
		return url
	}
	return fmt.Sprintf("postgres://%s:***@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
}
