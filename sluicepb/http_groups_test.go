package sluicepb_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluicepb"
)

// workflowBody returns the body of POST /api/jobs/workflows: a charge of
// amount after a mail, and a callback of topic on failure.
func workflowBody(amount int, callback string) map[string]any {
	return map[string]any{
		"name": "order",
		"tasks": []any{
			map[string]any{"name": "mail", "topic": "mail", "payload": map[string]any{"to": "a@b.c"}},
			map[string]any{"name": "charge", "topic": "charge", "payload": map[string]any{"order": "o1", "amount": amount},
				"after": []string{"mail"}},
		},
		"on_failure": []any{map[string]any{"topic": callback, "payload": map[string]any{"to": "support@b.c", "amount": 1}}},
	}
}

// TestHTTPGroupsDefaultRules: the workflows' and batches' endpoints under
// /api/jobs are sluiceweb's, and with the default rules only superusers
// reach them.
func TestHTTPGroupsDefaultRules(t *testing.T) {
	t.Parallel()
	p, who := newHTTPApp(t, nil)
	c, err := p.jobs.Client()
	require.NoError(t, err)
	wf, err := c.EnqueueWorkflow(t.Context(), sluice.NewWorkflow("w").Add("a", MailArgs{To: "a@b.c"}, nil))
	require.NoError(t, err)
	b, err := c.EnqueueBatch(t.Context(), sluice.NewBatch("b").KeepOpen())
	require.NoError(t, err)
	batchBody := map[string]any{"name": "b2", "jobs": []any{map[string]any{"topic": "mail", "payload": map[string]any{"to": "x"}}}}
	for _, tc := range []struct {
		method, path string
		body         any
		ok           int
	}{
		{http.MethodPost, "/api/jobs/workflows", workflowBody(5, "mail"), http.StatusCreated},
		{http.MethodGet, "/api/jobs/workflows", nil, http.StatusOK},
		{http.MethodGet, "/api/jobs/workflows/" + wf.ID, nil, http.StatusOK},
		{http.MethodPost, "/api/jobs/workflows/" + wf.ID + "/cancel", nil, http.StatusOK},
		{http.MethodPost, "/api/jobs/workflows/" + wf.ID + "/retry", nil, http.StatusOK},
		{http.MethodPost, "/api/jobs/batches", batchBody, http.StatusCreated},
		{http.MethodGet, "/api/jobs/batches?statuses=open", nil, http.StatusOK},
		{http.MethodGet, "/api/jobs/batches/" + b.ID, nil, http.StatusOK},
		{http.MethodPost, "/api/jobs/batches/" + b.ID + "/jobs", map[string]any{"jobs": batchBody["jobs"]}, http.StatusCreated},
		{http.MethodPost, "/api/jobs/batches/" + b.ID + "/close", nil, http.StatusOK},
		{http.MethodPost, "/api/jobs/batches/" + b.ID + "/cancel", nil, http.StatusOK},
		{http.MethodPost, "/api/jobs/batches/" + b.ID + "/retry", nil, http.StatusOK},
		{http.MethodGet, "/api/jobs/dashboard/api/workflows/" + wf.ID, nil, http.StatusOK},
	} {
		superusersOnly(t, p, who, tc.method, tc.path, tc.body, tc.ok)
	}
	workflows, err := c.ListWorkflows(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, workflows.Groups, 2)
	g, err := c.GetBatch(t.Context(), b.ID)
	require.NoError(t, err)
	require.Len(t, g.Jobs, 1, "the job added")
	require.NotEqual(t, sluice.GroupOpen, g.Status, "closed")
}

// TestHTTPGroupsRules: the enqueue rule judges every task, job and
// callback of a workflow or batch, each with its payload as stored; the
// manage rule judges a workflow or batch read or acted on by the topics
// of its jobs and callbacks.
func TestHTTPGroupsRules(t *testing.T) {
	t.Parallel()
	p, who := newHTTPApp(t, &sluicepb.Config{
		EnqueueRule: `@request.auth.id != "" && (topic = "mail" || payload.amount <= 100)`,
		ManageRule:  `@request.auth.id != "" && topic != "charge"`,
	})
	c, err := p.jobs.Client()
	require.NoError(t, err)
	open, err := c.EnqueueBatch(t.Context(), sluice.NewBatch("open").KeepOpen())
	require.NoError(t, err)
	add := func(amount int) map[string]any {
		return map[string]any{"jobs": []any{map[string]any{"topic": "charge", "payload": map[string]any{"amount": amount}}}}
	}
	for _, tc := range []struct {
		name, path, token string
		body              map[string]any
		want              int
	}{
		{"small charge", "/api/jobs/workflows", who.user, workflowBody(50, "mail"), http.StatusCreated},
		{"large charge", "/api/jobs/workflows", who.user, workflowBody(500, "mail"), http.StatusForbidden},
		{"a callback judged too", "/api/jobs/workflows", who.user, workflowBody(5, "report"), http.StatusCreated},
		{"no token", "/api/jobs/workflows", who.none, workflowBody(5, "mail"), http.StatusUnauthorized},
		{"superuser, large charge", "/api/jobs/workflows", who.superuser, workflowBody(500, "mail"), http.StatusCreated},
		{"add a small charge", "/api/jobs/batches/" + open.ID + "/jobs", who.user, add(5), http.StatusCreated},
		{"add a large charge", "/api/jobs/batches/" + open.ID + "/jobs", who.user, add(500), http.StatusForbidden},
	} {
		status, body := p.call(t, http.MethodPost, tc.path, tc.token, tc.body)
		require.Equal(t, tc.want, status, "%s: %v", tc.name, body)
	}
	// The callback of topic report has amount 1: allowed. One of amount
	// 500 is not.
	body := workflowBody(5, "report")
	body["on_failure"] = []any{map[string]any{"topic": "report", "payload": map[string]any{"amount": 500}}}
	status, answer := p.call(t, http.MethodPost, "/api/jobs/workflows", who.user, body)
	require.Equal(t, http.StatusForbidden, status, "%v", answer)
	workflows, err := c.ListWorkflows(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, workflows.Groups, 3, "the refused ones wrote nothing")

	mails, err := c.EnqueueBatch(t.Context(), sluice.NewBatch("mails").Add(MailArgs{To: "a@b.c"}, nil))
	require.NoError(t, err)
	charges, err := c.EnqueueWorkflow(t.Context(), sluice.NewWorkflow("charges").Add("mail", MailArgs{To: "a@b.c"}, nil).
		Add("charge", ChargeArgs{Order: "o", Amount: 1}, nil, "mail"))
	require.NoError(t, err)
	for _, tc := range []struct {
		name, method, path, token string
		want                      int
	}{
		{"user reads a batch of mails", http.MethodGet, "/api/jobs/batches/" + mails.ID, who.user, http.StatusOK},
		{"user cancels a batch of mails", http.MethodPost, "/api/jobs/batches/" + mails.ID + "/cancel", who.user, http.StatusOK},
		{"user reads a workflow with a charge", http.MethodGet, "/api/jobs/workflows/" + charges.ID, who.user, http.StatusForbidden},
		{"user cancels a workflow with a charge", http.MethodPost, "/api/jobs/workflows/" + charges.ID + "/cancel", who.user, http.StatusForbidden},
		{"user lists the workflows, of every topic", http.MethodGet, "/api/jobs/workflows", who.user, http.StatusForbidden},
		{"user reads a workflow that is not there", http.MethodGet, "/api/jobs/workflows/01900000-0000-7000-8000-000000000000", who.user, http.StatusNotFound},
		{"superuser reads a workflow with a charge", http.MethodGet, "/api/jobs/workflows/" + charges.ID, who.superuser, http.StatusOK},
	} {
		status, body := p.call(t, tc.method, tc.path, tc.token, nil)
		require.Equal(t, tc.want, status, "%s: %v", tc.name, body)
	}
	g, err := c.GetWorkflow(t.Context(), charges.ID)
	require.NoError(t, err)
	require.Equal(t, sluice.GroupRunning, g.Status, "the workflow with a charge was not cancelled")
}
