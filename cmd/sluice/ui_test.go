package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// serveUI starts "sluice ui" with args on a free loopback port and returns
// its base URL; it is interrupted, and must exit 0, when the test ends.
func serveUI(t *testing.T, d *db, env []string, args ...string) string {
	t.Helper()
	all := append(append(append([]string{}, d.flags...), "ui", "--listen", "127.0.0.1:0"), args...)
	cmd := exec.Command(bin, all...)
	cmd.Env = append(cleanEnv(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			require.NoError(t, err, "ui exits 0 when interrupted; stderr: %s", stderr.String())
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("ui did not exit when interrupted")
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "the ui's first line")
	_, url, ok := strings.Cut(strings.TrimSpace(line), "at ")
	require.True(t, ok, line)
	return strings.TrimSuffix(url, "/")
}

// get requests url with the header (a name and a value) and returns the
// status and body.
func get(t *testing.T, url string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(res.Body)
	require.NoError(t, err)
	return res.StatusCode, buf.String()
}

func TestUI(t *testing.T) {
	t.Parallel()
	eachDB(t, true, func(t *testing.T, d *db) {
		job := d.enqueue(t, "mail", "--queue", "mailers")
		base := serveUI(t, d, nil)

		code, body := get(t, base+"/api/jobs")
		require.Equal(t, http.StatusOK, code, body)
		var page struct {
			Items []struct {
				ID string `json:"id"`
			} `json:"items"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &page))
		require.Len(t, page.Items, 1)
		require.Equal(t, job.ID, page.Items[0].ID)
		code, body = get(t, base+"/")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, "<html")

		// The dashboard enqueues into the queues the database has.
		res, err := http.Post(base+"/api/jobs", "application/json",
			strings.NewReader(`{"topic": "mail", "payload": {}, "queue": "mailers"}`))
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusCreated, res.StatusCode)

		// A host name other than loopback is refused without a token: a
		// page that rebinds its name to 127.0.0.1 gets nothing.
		code, _ = get(t, base+"/api/jobs", "Host", "evil.example:80")
		require.Equal(t, http.StatusForbidden, code)

		// The command works no job.
		require.Equal(t, 2, decode[statsOut](t, d.run(t, "stats", "--json").ok(t)).ByStatus["pending"])
	})
}

func TestUIToken(t *testing.T) {
	t.Parallel()
	eachDB(t, true, func(t *testing.T, d *db) {
		for _, base := range []string{
			serveUI(t, d, nil, "--token", "s3cret"),
			serveUI(t, d, []string{"SLUICE_UI_TOKEN=s3cret"}),
		} {
			code, _ := get(t, base+"/api/jobs")
			require.Equal(t, http.StatusUnauthorized, code)
			code, _ = get(t, base+"/", "Authorization", "Bearer wrong")
			require.Equal(t, http.StatusUnauthorized, code)
			code, _ = get(t, base+"/api/jobs", "Authorization", "Bearer s3cret")
			require.Equal(t, http.StatusOK, code)
			req, err := http.NewRequest(http.MethodGet, base+"/api/jobs", nil)
			require.NoError(t, err)
			req.SetBasicAuth("anyone", "s3cret")
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			res.Body.Close()
			require.Equal(t, http.StatusOK, res.StatusCode, "browsers send the token by HTTP Basic")
			code, _ = get(t, base+"/api/jobs", "Authorization", "Bearer s3cret", "Host", "jobs.example.com")
			require.Equal(t, http.StatusOK, code, "with a token, any host name")
		}
	})
}

func TestUIRemote(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/ui.db"
	runBin(t, nil, "", "--database-url", path, "migrate", "up").ok(t)
	d := &db{flags: []string{"--database-url", path}}
	for _, args := range [][]string{
		{"--listen", "0.0.0.0:0"},
		{"--listen", ":0", "--token", "t"},
		{"--listen", "0.0.0.0:0", "--allow-remote"},
	} {
		d.run(t, append([]string{"ui"}, args...)...).fails(t, 2, "--allow-remote and a token")
	}
	d.run(t, "ui", "--listen", "nonsense").fails(t, 2, "--listen")

	// Remote with a token: served on every interface, the token required.
	cmd := exec.Command(bin, "--database-url", path, "ui", "--listen", "0.0.0.0:0", "--allow-remote", "--token", "t")
	cmd.Env = cleanEnv()
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	_, port, _ := strings.Cut(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(line), "/")), "[::]:")
	if port == "" {
		_, port, _ = strings.Cut(strings.TrimSuffix(strings.TrimSpace(line), "/"), "0.0.0.0:")
	}
	code, _ := get(t, "http://127.0.0.1:"+port+"/api/jobs")
	require.Equal(t, http.StatusUnauthorized, code, line)
	code, _ = get(t, "http://127.0.0.1:"+port+"/api/jobs", "Authorization", "Bearer t")
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	require.NoError(t, cmd.Wait())
}

// TestStatsIsTheAPIs prints, with stats --json, the object GET
// api/jobs/stats answers for the same parameters; and with nothing finished
// in the window, no success rate.
func TestStatsIsTheAPIs(t *testing.T) {
	t.Parallel()
	eachDB(t, true, func(t *testing.T, d *db) {
		text := d.run(t, "stats").ok(t)
		require.Contains(t, text, "last 1h0m0s: 0 completed, 0 failed, success rate —, mean run —, p95 —\n")
		for line := range strings.Lines(text) {
			require.Equal(t, strings.TrimRight(line, " \n")+"\n", line, "a line ending in spaces:\n%s", text)
		}

		d.enqueue(t, "mail", "--queue", "mailers")
		base := serveUI(t, d, nil)
		for _, tc := range []struct {
			flags []string
			query string
		}{
			{nil, ""},
			{[]string{"--topic", "mail", "--window", "10m", "--bucket", "2m"}, "?topics=mail&window=10m&bucket=2m"},
		} {
			cli := decode[map[string]any](t, d.run(t, append([]string{"stats", "--json"}, tc.flags...)...).ok(t))
			code, body := get(t, base+"/api/jobs/stats"+tc.query)
			require.Equal(t, http.StatusOK, code, body)
			api := decode[map[string]any](t, body)
			require.Contains(t, cli, "success_rate")
			require.Nil(t, cli["success_rate"], "no outcomes, no rate")
			// The series' buckets run up to now: read a moment apart, the
			// two may straddle a bucket's end.
			cs, as := cli["series"].([]any), api["series"].([]any)
			require.NotEmpty(t, cs, "%q", tc.flags)
			require.InDelta(t, len(as), len(cs), 1, "%q", tc.flags)
			delete(cli, "series")
			delete(api, "series")
			require.Equal(t, api, cli, "%q", tc.flags)
		}
	})
}
