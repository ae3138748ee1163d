package sluiceweb_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluiceweb"
)

// TestEncryptedPayloads enqueues over HTTP into an encrypted topic: the
// API answers the payload as stored, sealed, naming its key, and in
// clear only to a request that sends the key; a malformed key, a key of
// the wrong length or another key is a 400, and the job is unchanged.
func TestEncryptedPayloads(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		key := sluice.EncryptionKey{ID: "k1", Key: bytes.Repeat([]byte{7}, 32)}
		cfg := handlerConfig()
		cfg.Encryption = sluice.Encryption{Keys: []sluice.EncryptionKey{key}, Topics: []string{"mail"}}
		e := newEnvWith(t, db, cfg, nil)
		var enq struct{ Job sluice.JobRow }
		e.do("POST", "api/jobs", `{"topic": "mail", "payload": {"to": "ada@example.com"}}`).json(t, http.StatusCreated, &enq)
		id := enq.Job.ID
		for _, body := range [][]byte{mustBody(t, e, "api/jobs/"+id), mustBody(t, e, "api/jobs?topics=mail")} {
			require.NotContains(t, string(body), "ada@example.com")
			require.Contains(t, string(body), `"sluice_sealed"`)
		}
		header := base64.StdEncoding.EncodeToString(key.Key)
		res := e.do("GET", "api/jobs/"+id, "", sluiceweb.PayloadKeyHeader, "k1:"+header)
		var got sluice.JobRow
		res.json(t, http.StatusOK, &got)
		require.JSONEq(t, `{"to": "ada@example.com"}`, string(got.Payload))
		require.Equal(t, "no-store", res.header.Get("Cache-Control"))

		for value, code := range map[string]string{
			"k1":                                  sluiceweb.CodeInvalidKey, // no key at all
			"k1:not base64!":                      sluiceweb.CodeInvalidKey,
			"k1:" + header[:20]:                   sluiceweb.CodeInvalidKey, // the wrong length
			"bad id:" + header:                    sluiceweb.CodeInvalidKey,
			"k2:" + header:                        sluiceweb.CodeUnknownKey,
			"k1:" + strings.Repeat("A", 43) + "=": sluiceweb.CodeUnknownKey, // another key under its ID
		} {
			p := e.do("GET", "api/jobs/"+id, "", sluiceweb.PayloadKeyHeader, value).problem(t, http.StatusBadRequest, code)
			require.Equal(t, sluiceweb.PayloadKeyHeader, p.Field, value)
		}
		row, err := e.client.Get(t.Context(), id)
		require.NoError(t, err)
		keyID, ok := sluice.PayloadKeyID(row)
		require.True(t, ok, "unchanged")
		require.Equal(t, "k1", keyID)
	})
}

// mustBody returns the body of a 200 answer to GET path.
func mustBody(t *testing.T, e *env, path string) []byte {
	t.Helper()
	res := e.do("GET", path, "")
	require.Equal(t, http.StatusOK, res.status, "body: %s", res.body)
	require.True(t, json.Valid(res.body))
	return res.body
}
