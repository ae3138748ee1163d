// Package redisserver starts a fresh Redis server of its own, on a free
// port and in a temporary directory, and stops it: one per measurement of a
// system whose store is Redis, so that no measurement inherits another's
// data, snapshots or append-only file. The comparison program and the tests
// of the child programs on Redis share it. It runs the machine's
// redis-server and depends on the standard library alone.
package redisserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Persistence is how a server keeps its data on disk.
type Persistence int

const (
	// Snapshot is Redis's default: RDB snapshots at its default save points
	// (after an hour with one change, five minutes with 100, a minute with
	// 10,000), no append-only file. A crash loses every write since the
	// last snapshot.
	Snapshot Persistence = iota
	// AOF adds the append-only file, written on every write and fsynced
	// once a second (appendonly yes, appendfsync everysec), to the default
	// snapshots: both of Redis's persistence methods, its advice for data
	// that must survive a crash. A crash of the machine loses about the last
	// second of writes; a crash of the server process alone next to none.
	AOF
)

// String names the persistence as the comparison reports it.
func (p Persistence) String() string {
	if p == AOF {
		return "aof"
	}
	return "rdb"
}

// flags are redis-server's command-line options for p.
func (p Persistence) flags() []string {
	if p == AOF {
		return []string{"--appendonly", "yes", "--appendfsync", "everysec"}
	}
	return nil
}

// Binary is the program Start runs, looked up in PATH.
const Binary = "redis-server"

// Timeouts of a server's start and stop.
const (
	readyTimeout = 10 * time.Second
	stopTimeout  = 10 * time.Second
)

// startAttempts bounds the retries when another process takes the free
// port between the moment it is found and the moment Redis binds it.
const startAttempts = 3

// Server is one running redis-server.
type Server struct {
	cmd    *exec.Cmd
	dir    string
	addr   string
	out    *lockedBuffer
	exited chan struct{} // closed when the process has exited
	err    error         // the process's exit status, set before exited closes
	once   sync.Once
	stop   error
}

// Start starts a redis-server with persistence p on a free port of
// 127.0.0.1, in a fresh temporary directory that Stop removes, and returns
// once it answers PING. It fails with a clear error when redis-server is
// not installed.
func Start(ctx context.Context, p Persistence) (*Server, error) {
	bin, err := exec.LookPath(Binary)
	if err != nil {
		return nil, fmt.Errorf("redis: %s not found (install Redis 7, e.g. apt-get install redis-server): %w", Binary, err)
	}
	for attempt := 1; ; attempt++ {
		s, err := start(ctx, bin, p)
		if err == nil || attempt == startAttempts || !errors.Is(err, errPortTaken) {
			return s, err
		}
	}
}

var errPortTaken = errors.New("port taken")

func start(ctx context.Context, bin string, p Persistence) (*Server, error) {
	dir, err := os.MkdirTemp("", "sluice-redis-")
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("redis: find a free port: %w", err)
	}
	args := append([]string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--dir", dir,
	}, p.flags()...)
	s := &Server{
		cmd:    exec.Command(bin, args...),
		dir:    dir,
		addr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		out:    &lockedBuffer{},
		exited: make(chan struct{}),
	}
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("redis: start %s: %w", bin, err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(ctx); err != nil {
		_ = s.Stop()
		if strings.Contains(s.out.String(), "Address already in use") {
			err = fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return nil, err
	}
	return s, nil
}

// freePort returns a TCP port of 127.0.0.1 that nothing listened on a
// moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady waits until the server answers PING, it exits, or the time
// runs out.
func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		if s.command("PING") == "+PONG" {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("redis: redis-server exited at start (%v):\n%s", s.err, s.out.String())
		case <-ctx.Done():
			return fmt.Errorf("redis: redis-server did not answer PING on %s: %w\n%s", s.addr, ctx.Err(), s.out.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// command sends one inline command and returns the first line of the
// reply, or "" if the server could not be reached.
func (s *Server) command(cmd string) string {
	conn, err := net.DialTimeout("tcp", s.addr, time.Second)
	if err != nil {
		return ""
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte(cmd + "\r\n")); err != nil {
		return ""
	}
	line, _ := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimRight(line, "\r\n")
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.addr }

// URL is the server's address as a redis:// URL, which a child program
// receives in harness.Spec.DB.
func (s *Server) URL() string { return "redis://" + s.addr }

// Stop shuts the server down without saving (SHUTDOWN NOSAVE, which also
// ends a snapshot or rewrite in progress), kills it if it has not exited
// within ten seconds, waits for it and removes its directory. Calling it
// again returns the first call's result.
func (s *Server) Stop() error {
	s.once.Do(func() {
		defer os.RemoveAll(s.dir)
		select {
		case <-s.exited:
			return // it never started, or died: nothing to stop
		default:
		}
		s.command("SHUTDOWN NOSAVE")
		select {
		case <-s.exited:
		case <-time.After(stopTimeout):
			_ = s.cmd.Process.Kill()
			<-s.exited
			s.stop = fmt.Errorf("redis: redis-server on %s ignored SHUTDOWN NOSAVE for %s and was killed:\n%s", s.addr, stopTimeout, s.out.String())
		}
	})
	return s.stop
}

// lockedBuffer collects the server's output, written by the process's
// copying goroutine and read by Start's errors.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
