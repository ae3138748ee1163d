package browsertest

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

// TestEncryptedPayload opens a job whose payload is encrypted: the page
// says so and names the key, and shows neither the payload nor its
// ciphertext.
func TestEncryptedPayload(t *testing.T) {
	encrypt := func(fx *fixture) {
		fx.configure = func(cfg *sluice.Config) {
			cfg.Encryption = sluice.Encryption{
				Keys:   []sluice.EncryptionKey{{ID: "2026-06", Key: bytes.Repeat([]byte{3}, 32)}},
				Topics: []string{"mail"},
			}
		}
	}
	onBothDriversWith(t, encrypt, func(t *testing.T, s *server, _ *fixture) {
		dir := shots(t, "TestEncryptedPayload")
		res, err := s.client.Enqueue(t.Context(), mailArgs{To: "ada@example.com"}, &sluice.EnqueueOptions{
			RunAt: time.Now().Add(time.Hour), Tags: []string{"welcome"}, Metadata: map[string]any{"customer_id": 42}})
		require.NoError(t, err)
		var sealed struct{ Data string }
		require.NoError(t, json.Unmarshal(res.Job.Payload, &sealed))
		require.NotEmpty(t, sealed.Data)

		p := newPage(t)
		p.Eval(`String(location.href = "` + s.url + `#/jobs/` + res.Job.ID + `")`)
		p.Wait("the encrypted job", text("main h1")+` === "mail" && !!document.querySelector(".sealed")`)
		require.Contains(t, p.Eval(text(".sealed")), "Encrypted with key 2026-06")
		body := p.Eval(`document.body.innerText`)
		require.NotContains(t, body, "ada@example.com", "the payload is never shown")
		require.NotContains(t, body, sealed.Data[:16], "nor its ciphertext")
		require.Contains(t, body, "customer_id", "metadata stays clear text")
		p.screenshot(dir, "encrypted.png")
		require.Empty(t, p.Errors(), "the console's errors")
	})
}
