// Package pgbouncertest starts a PgBouncer of a test's own in front of the
// Postgres server the tests use (see dbtest), in transaction pooling mode,
// and stops it when the test ends. Each PgBouncer listens on a port of its
// own, with a configuration file written for it: authentication "any"
// against the server's own user, pool_mode=transaction, and as many server
// connections per database as the test asks. No test relies on a PgBouncer
// started by hand.
//
// The binary is SLUICE_PGBOUNCER, or pgbouncer on the PATH or in
// /usr/sbin (Debian's pgbouncer package). When there is none the test is
// skipped, unless SLUICE_REQUIRE_POSTGRES=1, in which case it fails: CI
// sets it, so no PgBouncer test is skipped there.
//
// It is for tests only.
package pgbouncertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/testkit/dbtest"
)

// EnvBinary names the PgBouncer binary to run, when set.
const EnvBinary = "SLUICE_PGBOUNCER"

// Options configure a PgBouncer.
type Options struct {
	// PoolSize is how many server connections PgBouncer opens at most for
	// each database and user (default_pool_size). Default 4.
	PoolSize int
	// MaxClients is how many client connections it accepts
	// (max_client_conn). Default 1000.
	MaxClients int
}

// Bouncer is a running PgBouncer.
type Bouncer struct {
	port int
	// Log is the file PgBouncer writes its log to.
	Log string
}

// Binary returns the path of the PgBouncer binary, or skips t (fails it,
// under SLUICE_REQUIRE_POSTGRES=1) when there is none.
func Binary(t testing.TB) string {
	t.Helper()
	msg := "no PgBouncer for this test: install it (apt-get install pgbouncer), or set " + EnvBinary
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
		msg = fmt.Sprintf("no PgBouncer for this test: %s names %s, which does not exist", EnvBinary, p)
	} else if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p
	} else if _, err := os.Stat("/usr/sbin/pgbouncer"); err == nil {
		return "/usr/sbin/pgbouncer"
	}
	if os.Getenv(dbtest.EnvRequire) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Start starts a PgBouncer in transaction pooling mode in front of the
// test server (dbtest.URL), and stops it when t ends.
func Start(t testing.TB, opts Options) *Bouncer {
	t.Helper()
	bin := Binary(t)
	server := dbtest.URL(t)
	if opts.PoolSize == 0 {
		opts.PoolSize = 4
	}
	if opts.MaxClients == 0 {
		opts.MaxClients = 1000
	}
	cfg, err := pgx.ParseConfig(server)
	if err != nil {
		t.Fatalf("pgbouncertest: parse the server's URL: %v", err)
	}
	dir := t.TempDir()
	var lastErr error
	// A port found free may be taken before PgBouncer binds it: try again.
	for range 5 {
		b, err := start(t, bin, dir, cfg, opts)
		if err == nil {
			return b
		}
		lastErr = err
	}
	t.Fatalf("pgbouncertest: %v", lastErr)
	return nil
}

// start writes a configuration and starts PgBouncer on a free port.
func start(t testing.TB, bin, dir string, cfg *pgx.ConnConfig, opts Options) (*Bouncer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	b := &Bouncer{port: port, Log: filepath.Join(dir, fmt.Sprintf("pgbouncer-%d.log", port))}
	ini := filepath.Join(dir, fmt.Sprintf("pgbouncer-%d.ini", port))
	if err := os.WriteFile(ini, []byte(config(cfg, port, opts)), 0o644); err != nil {
		return nil, err
	}
	logf, err := os.Create(b.Log)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	args := []string{ini}
	if os.Geteuid() == 0 {
		// PgBouncer refuses to run as root; it reads its configuration
		// first, then runs as this user.
		args = []string{"-u", "nobody", ini}
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	if err := waitListening(port, exited); err != nil {
		_ = cmd.Process.Kill()
		<-exited
		return nil, fmt.Errorf("%w\n%s", err, tail(b.Log))
	}
	t.Cleanup(func() {
		// SIGTERM is PgBouncer's immediate shutdown.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("pgbouncer's log (%s):\n%s", b.Log, tail(b.Log))
		}
	})
	return b, nil
}

// config returns the configuration of a PgBouncer on port in front of the
// server cfg names: every database name a client asks for is the server's
// database of that name, reached as cfg's user.
func config(cfg *pgx.ConnConfig, port int, opts Options) string {
	server := fmt.Sprintf("host=%s port=%d user=%s", cfg.Host, cfg.Port, quote(cfg.User))
	if cfg.Password != "" {
		server += " password=" + quote(cfg.Password)
	}
	return fmt.Sprintf(`[databases]
* = %s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
listen_backlog = 4096
unix_socket_dir =
auth_type = any
pool_mode = transaction
default_pool_size = %d
min_pool_size = 0
reserve_pool_size = 0
max_client_conn = %d
logfile =
pidfile =
log_connections = 0
log_disconnections = 0
stats_users = pgbouncer
`, server, port, opts.PoolSize, opts.MaxClients)
}

// quote quotes a value of a PgBouncer connection string.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitListening waits until port accepts connections, PgBouncer exits, or
// ten seconds pass.
func waitListening(port int, exited <-chan struct{}) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-exited:
			return errors.New("pgbouncer exited at start")
		default:
		}
		conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
		if err == nil {
			_ = conn.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pgbouncer not listening on %d after 10s: %w", port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tail returns the end of the file at path.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Port returns the port PgBouncer listens on.
func (b *Bouncer) Port() int { return b.port }

// URL returns direct, a URL of the test server, made to go through the
// PgBouncer: the same user, database and parameters, on its port, without
// TLS, and with params (pgx's default_query_exec_mode, say) added.
func (b *Bouncer) URL(t testing.TB, direct string, params ...string) string {
	t.Helper()
	u, err := url.Parse(direct)
	if err != nil || u.Scheme == "" {
		t.Fatalf("pgbouncertest: %q is not a URL", direct)
	}
	u.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port))
	q := u.Query()
	q.Set("sslmode", "disable")
	for i := 0; i+1 < len(params); i += 2 {
		q.Set(params[i], params[i+1])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Stats returns PgBouncer's pools as SHOW POOLS reports them on its
// admin console: for each database, its server connections in use and
// idle, and its clients waiting for one.
func (b *Bouncer) Stats(ctx context.Context) (map[string]PoolStats, error) {
	u := fmt.Sprintf("postgres://pgbouncer@127.0.0.1:%d/pgbouncer?sslmode=disable&default_query_exec_mode=simple_protocol", b.port)
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, "SHOW POOLS")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]PoolStats{}
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		m := map[string]any{}
		for i, f := range rows.FieldDescriptions() {
			m[f.Name] = vals[i]
		}
		db, _ := m["database"].(string)
		out[db] = PoolStats{
			ServerActive: toInt(m["sv_active"]), ServerIdle: toInt(m["sv_idle"]), ServerUsed: toInt(m["sv_used"]),
			ClientsActive: toInt(m["cl_active"]), ClientsWaiting: toInt(m["cl_waiting"]),
			MaxWait: time.Duration(toInt(m["maxwait"]))*time.Second + time.Duration(toInt(m["maxwait_us"]))*time.Microsecond,
		}
	}
	return out, rows.Err()
}

// PoolStats are one database's line of SHOW POOLS.
type PoolStats struct {
	// ServerActive, ServerIdle and ServerUsed count the server
	// connections linked to a client, idle, and idle but not yet checked.
	ServerActive, ServerIdle, ServerUsed int
	// ClientsActive and ClientsWaiting count the clients linked to a
	// server connection or ready to be, and those waiting for one.
	ClientsActive, ClientsWaiting int
	// MaxWait is how long the client that has waited longest for a
	// server connection has waited so far.
	MaxWait time.Duration
}

// Servers returns how many server connections the pool holds.
func (s PoolStats) Servers() int { return s.ServerActive + s.ServerIdle + s.ServerUsed }

// toInt returns v, a number SHOW POOLS reports, as an int.
func toInt(v any) int {
	switch n := v.(type) {
	case int64:
		return int(n)
	case int32:
		return int(n)
	case int16:
		return int(n)
	case string:
		i, _ := strconv.Atoi(n)
		return i
	}
	return 0
}
