package sluicepb_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"
	_ "github.com/pocketbase/pocketbase/migrations" // the system collections
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/sluicepb"
)

// ChargeArgs are the test jobs' args.
type ChargeArgs struct {
	Order  string `json:"order"`
	Amount int    `json:"amount"`
}

// Topic implements sluice.JobArgs.
func (ChargeArgs) Topic() string { return "charge" }

// MailArgs are a second topic's args.
type MailArgs struct {
	To string `json:"to"`
}

// Topic implements sluice.JobArgs.
func (MailArgs) Topic() string { return "mail" }

// pbApp is a real PocketBase app on a fresh data directory, with jobs
// registered.
type pbApp struct {
	app  *core.BaseApp
	jobs *sluicepb.Jobs
	dir  string
	// url is the server's base URL once serve has run.
	url    string
	served chan error
}

// newApp creates an app on a fresh data directory, registers jobs with cfg,
// lets setup add workers, bootstraps the app and runs its migrations. The
// app is terminated when the test ends.
func newApp(t testing.TB, cfg *sluicepb.Config, setup func(*sluicepb.Jobs)) *pbApp {
	t.Helper()
	dir := t.TempDir()
	app := core.NewBaseApp(core.BaseAppConfig{DataDir: dir})
	jobs, err := sluicepb.Register(app, cfg)
	require.NoError(t, err)
	if setup != nil {
		setup(jobs)
	}
	require.NoError(t, app.Bootstrap())
	require.NoError(t, app.RunAllMigrations())
	p := &pbApp{app: app, jobs: jobs, dir: dir}
	t.Cleanup(func() { p.terminate(t) })
	return p
}

// serve serves the app on an ephemeral port of the loopback interface and
// waits until it answers.
func (p *pbApp) serve(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p.app.OnServe().BindFunc(func(e *core.ServeEvent) error {
		e.Listener = ln
		e.InstallerFunc = nil
		return e.Next()
	})
	p.url = "http://" + ln.Addr().String()
	p.served = make(chan error, 1)
	go func() { p.served <- apis.Serve(p.app, apis.ServeConfig{HttpAddr: ln.Addr().String()}) }()
	require.Eventually(t, func() bool {
		res, err := http.Get(p.url + "/api/health")
		if err != nil {
			return false
		}
		_ = res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, 20*time.Second, 10*time.Millisecond)
}

// terminate triggers the app's termination, as PocketBase does on a
// signal, once.
func (p *pbApp) terminate(t testing.TB) {
	t.Helper()
	if p.app == nil || !p.app.IsBootstrapped() {
		return
	}
	err := p.app.OnTerminate().Trigger(&core.TerminateEvent{App: p.app}, func(e *core.TerminateEvent) error {
		return e.App.ResetBootstrapState()
	})
	require.NoError(t, err)
	if p.served != nil {
		select {
		case err := <-p.served:
			require.NoError(t, err)
		case <-time.After(20 * time.Second):
			t.Fatal("the server did not stop")
		}
		p.served = nil
	}
}

// newAuth creates an auth record in collection (_superusers or users) and
// returns its auth token.
func (p *pbApp) newAuth(t testing.TB, collection, email string) string {
	t.Helper()
	_, token := p.newRecord(t, collection, email)
	return token
}

// newRecord creates an auth record in collection and returns its ID and
// auth token.
func (p *pbApp) newRecord(t testing.TB, collection, email string) (id, token string) {
	t.Helper()
	coll, err := p.app.FindCollectionByNameOrId(collection)
	require.NoError(t, err)
	rec := core.NewRecord(coll)
	rec.SetEmail(email)
	rec.SetPassword("1234567890")
	require.NoError(t, p.app.Save(rec))
	token, err = rec.NewAuthToken()
	require.NoError(t, err)
	return rec.Id, token
}

// call sends a request to the app with token (none if empty) and body
// (encoded as JSON unless nil), and returns the status and the decoded
// answer.
func (p *pbApp) call(t testing.TB, method, path, token string, body any) (int, map[string]any) {
	t.Helper()
	if body == nil {
		return p.callRaw(t, method, path, token, "", nil)
	}
	b, err := json.Marshal(body)
	require.NoError(t, err)
	return p.callRaw(t, method, path, token, "application/json", b)
}

// callRaw sends a request to the app with token (none if empty) and body
// as it is, sent as contentType (no header if empty), and returns the
// status and the decoded answer.
func (p *pbApp) callRaw(t testing.TB, method, path, token, contentType string, body []byte) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, p.url+path, rd)
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", token)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var out map[string]any
	if len(raw) > 0 && raw[0] == '{' {
		require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
	}
	return res.StatusCode, out
}

// errRollback makes RunInTransaction roll back.
var errRollback = errors.New("roll back")
