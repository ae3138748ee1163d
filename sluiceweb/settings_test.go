package sluiceweb_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/sluiceweb"
)

// TestSettings says what the dashboard adapts to: read-only, the topics
// that may be enqueued, the client's worker topics and its payload limit.
func TestSettings(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		type settings struct {
			ReadOnly        bool     `json:"read_only"`
			AllowedTopics   []string `json:"allowed_topics"`
			Topics          []string `json:"topics"`
			MaxPayloadBytes int      `json:"max_payload_bytes"`
		}
		var got settings
		newEnv(t, db, nil).do("GET", "api/settings", "").json(t, http.StatusOK, &got)
		require.Equal(t, settings{AllowedTopics: []string{}, Topics: []string{"mail"}, MaxPayloadBytes: 1 << 20}, got)

		e := newEnv(t, db, &sluiceweb.Options{Authorize: sluiceweb.AllowAll, ReadOnly: true, AllowedTopics: []string{"mail", "audit"}})
		e.do("GET", "api/settings", "").json(t, http.StatusOK, &got)
		require.Equal(t, settings{ReadOnly: true, AllowedTopics: []string{"audit", "mail"}, Topics: []string{"mail"},
			MaxPayloadBytes: 1 << 20}, got)
		e.do("GET", "api/settings?x=1", "").problem(t, http.StatusBadRequest, sluiceweb.CodeInvalidFilter)
	})
}
