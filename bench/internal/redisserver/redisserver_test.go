package redisserver

import (
	"bufio"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// TestStartGivesEachServerItsPersistence starts one server of each kind
// at once and checks that each answers on a port of its own, with its
// persistence, in a directory of its own that Stop removes.
func TestStartGivesEachServerItsPersistence(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		p                 Persistence
		appendonly, fsync string
	}{
		{AOF, "yes", "everysec"},
		{Snapshot, "no", "everysec"},
	} {
		t.Run(c.p.String(), func(t *testing.T) {
			t.Parallel()
			s, err := Start(t.Context(), c.p)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Stop() })
			if !strings.HasPrefix(s.URL(), "redis://127.0.0.1:") {
				t.Errorf("URL %q", s.URL())
			}
			if got := config(t, s.Addr(), "appendonly"); got != c.appendonly {
				t.Errorf("appendonly %q, want %q", got, c.appendonly)
			}
			if got := config(t, s.Addr(), "appendfsync"); got != c.fsync {
				t.Errorf("appendfsync %q, want %q", got, c.fsync)
			}
			// Redis's default save points stay in both.
			if got := config(t, s.Addr(), "save"); got != "3600 1 300 100 60 10000" {
				t.Errorf("save %q", got)
			}
			if got := config(t, s.Addr(), "dir"); got != s.dir {
				t.Errorf("dir %q, want %q", got, s.dir)
			}
			if s.command("SET k v") != "+OK" {
				t.Fatal("SET failed")
			}

			if err := s.Stop(); err != nil {
				t.Fatal(err)
			}
			if err := s.Stop(); err != nil {
				t.Errorf("second Stop: %v", err)
			}
			if _, err := os.Stat(s.dir); !os.IsNotExist(err) {
				t.Errorf("directory %s left behind: %v", s.dir, err)
			}
			if _, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
				t.Error("the server still answers after Stop")
			}
		})
	}
}

// TestStartWithoutRedisSaysSo checks the error when redis-server is not
// installed.
func TestStartWithoutRedisSaysSo(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Start(t.Context(), AOF)
	if err == nil || !strings.Contains(err.Error(), "install Redis") {
		t.Errorf("Start without redis-server: %v", err)
	}
}

// config returns one of the server's settings (CONFIG GET).
func config(t *testing.T, addr, name string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte("CONFIG GET " + name + "\r\n")); err != nil {
		t.Fatal(err)
	}
	// The reply is an array of two bulk strings: *2, $len, name, $len, value.
	r := bufio.NewReader(conn)
	var lines []string
	for range 5 {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("CONFIG GET %s: %v after %q", name, err, lines)
		}
		lines = append(lines, strings.TrimRight(line, "\r\n"))
	}
	if lines[0] != "*2" || lines[2] != name {
		t.Fatalf("CONFIG GET %s: %q", name, lines)
	}
	return lines[4]
}
