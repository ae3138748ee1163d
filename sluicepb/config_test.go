package sluicepb_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluicepb"
)

// TestInvalidConfig: Register refuses a bad setting with an error naming
// the field, and binds nothing.
func TestInvalidConfig(t *testing.T) {
	t.Parallel()
	for field, cfg := range map[string]*sluicepb.Config{
		"Table":                              {Table: "jobs; DROP TABLE users"},
		"Workers":                            {Workers: -1},
		"PollInterval":                       {PollInterval: -time.Second},
		"LockDuration":                       {LockDuration: -time.Second},
		"ShutdownTimeout":                    {ShutdownTimeout: -time.Second},
		"AllowedTopics[1]":                   {AllowedTopics: []string{"mail", ""}},
		"Sluice.Queues[\"mail\"].MaxWorkers": {Sluice: &sluice.Config{Queues: map[string]sluice.QueueConfig{"mail": {MaxWorkers: -1}}}},
	} {
		app := core.NewBaseApp(core.BaseAppConfig{DataDir: t.TempDir()})
		jobs, err := sluicepb.Register(app, cfg)
		require.ErrorIs(t, err, sluice.ErrInvalidConfig, field)
		var ce *sluicepb.ConfigError
		require.ErrorAs(t, err, &ce, field)
		require.Equal(t, field, ce.Field)
		require.Nil(t, jobs)
	}
	_, err := sluicepb.Register(nil, nil)
	require.ErrorIs(t, err, sluice.ErrInvalidConfig)
}

// TestCustomTable: the jobs live in the table the config names.
func TestCustomTable(t *testing.T) {
	t.Parallel()
	p := newApp(t, &sluicepb.Config{Table: "queue_jobs"}, nil)
	id := p.enqueue(t, MailArgs{To: "a@b.c"})
	var got string
	require.NoError(t, p.app.DB().NewQuery("SELECT id FROM queue_jobs").Row(&got))
	require.Equal(t, id, got)
	require.False(t, p.app.HasTable(sluicepb.DefaultTable))
}

// TestBeforeBootstrap: before the app's bootstrap, jobs cannot be used;
// workers are fixed once the client exists.
func TestBeforeBootstrap(t *testing.T) {
	t.Parallel()
	app := core.NewBaseApp(core.BaseAppConfig{DataDir: t.TempDir()})
	jobs, err := sluicepb.Register(app, nil)
	require.NoError(t, err)
	_, err = jobs.Enqueue(t.Context(), MailArgs{}, nil)
	require.ErrorIs(t, err, sluicepb.ErrNotBootstrapped)
	_, err = jobs.Client()
	require.ErrorIs(t, err, sluicepb.ErrNotBootstrapped)

	require.NoError(t, app.Bootstrap())
	t.Cleanup(func() { _ = app.ResetBootstrapState() })
	_, err = jobs.Enqueue(t.Context(), MailArgs{To: "a@b.c"}, nil)
	require.NoError(t, err)
	err = sluicepb.AddWorker(jobs, sluice.WorkFunc(func(context.Context, *sluice.Job[MailArgs]) error { return nil }))
	require.ErrorIs(t, err, sluicepb.ErrClientCreated)
}

// TestDisableHTTP: no API, no panel.
func TestDisableHTTP(t *testing.T) {
	t.Parallel()
	p := newApp(t, &sluicepb.Config{DisableHTTP: true}, nil)
	p.serve(t)
	root := p.newAuth(t, "_superusers", "root@example.com")
	for _, path := range []string{"/api/jobs", "/api/jobs/stats", sluicepb.PanelPath, sluicepb.DashboardPath} {
		status, _ := p.call(t, http.MethodGet, path, root, nil)
		require.Equal(t, http.StatusNotFound, status, path)
	}
}

// TestBadRule: a rule that does not parse refuses every request but a
// superuser's.
func TestBadRule(t *testing.T) {
	t.Parallel()
	p, who := newHTTPApp(t, &sluicepb.Config{ManageRule: `topic ==== "mail"`})
	status, body := p.call(t, http.MethodGet, "/api/jobs?topics=mail", who.user, nil)
	require.Equal(t, http.StatusForbidden, status)
	require.Equal(t, "the manage rule could not be evaluated", body["detail"])
	status, _ = p.call(t, http.MethodGet, "/api/jobs", who.superuser, nil)
	require.Equal(t, http.StatusOK, status)
}
