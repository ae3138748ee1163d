package sluiceweb_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

// TestPayloadFilter lists and acts on jobs by payload values: in a list's
// query (payload.<path>=<value>, the value read as JSON when it is a JSON
// scalar) and in a bulk action's body; a malformed path, a value that is
// not a scalar and an encrypted topic are 400 invalid_filter, and nothing
// changes.
func TestPayloadFilter(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		cfg := handlerConfig()
		cfg.Encryption = sluice.Encryption{Keys: []sluice.EncryptionKey{{ID: "k1", Key: bytes.Repeat([]byte{7}, 16)}},
			Topics: []string{"mail"}}
		sluice.AddRawWorker(cfg.Workers, "invoice", sluice.WorkFunc(func(ctx context.Context, job *sluice.Job[sluice.RawArgs]) error { return nil }))
		e := newEnvWith(t, db, cfg, nil)
		ids := map[string]string{}
		for name, payload := range map[string]string{"num": `{"customer_id": 42, "who": {"name": "ada"}}`,
			"text": `{"customer_id": "42"}`, "other": `{"customer_id": 7}`} {
			var res struct{ Job sluice.JobRow }
			e.do("POST", "api/jobs", `{"topic": "invoice", "payload": `+payload+`}`).json(t, http.StatusCreated, &res)
			ids[name] = res.Job.ID
		}
		list := func(query string) []string {
			t.Helper()
			var res struct{ Items []sluice.JobRow }
			e.do("GET", "api/jobs?"+query, "").json(t, http.StatusOK, &res)
			out := []string{}
			for _, j := range res.Items {
				out = append(out, j.ID)
			}
			return out
		}
		require.Equal(t, []string{ids["num"]}, list("payload.customer_id=42"))
		require.Equal(t, []string{ids["text"]}, list("payload.customer_id="+url.QueryEscape(`"42"`)))
		require.Equal(t, []string{ids["num"]}, list("topics=invoice&payload.who.name=ada"))
		require.Empty(t, list("payload.who.name=bob"))

		for query, field := range map[string]string{
			"payload.customer..id=1":     `payload["customer..id"]`,
			"payload.a%20b=1":            `payload["a b"]`,
			"payload.=1":                 "payload.",
			"topics=mail&payload.to=ada": "topics[0]",
		} {
			p := e.do("GET", "api/jobs?"+query, "").problem(t, http.StatusBadRequest, "invalid_filter")
			require.Equal(t, field, p.Field, query)
		}
		e.do("POST", "api/jobs/cancel", `{"payload": {"who": {"name": "ada"}}}`).problem(t, http.StatusBadRequest, "invalid_filter")
		var res struct{ Count int }
		e.do("POST", "api/jobs/cancel", `{"payload": {"customer_id": 7}}`).json(t, http.StatusOK, &res)
		require.Equal(t, 1, res.Count)
		row, err := e.client.Get(t.Context(), ids["other"])
		require.NoError(t, err)
		require.Equal(t, sluice.StatusCancelled, row.Status)
		var body json.RawMessage
		e.do("GET", "api/jobs?statuses=cancelled", "").json(t, http.StatusOK, &body)
		require.Contains(t, string(body), ids["other"])
	})
}
