package sluiceweb

import (
	"net/http"
	"slices"
)

// settingsResponse answers GET api/settings: what the dashboard adapts
// to.
type settingsResponse struct {
	// ReadOnly is Options.ReadOnly: no enqueue nor action is allowed.
	ReadOnly bool `json:"read_only"`
	// AllowedTopics are Options.AllowedTopics, the only topics that may be
	// enqueued; empty when any may.
	AllowedTopics []string `json:"allowed_topics"`
	// Topics are the topics the serving client has workers for, sorted;
	// empty for an insert-only client, which enqueues any topic.
	Topics []string `json:"topics"`
	// MaxPayloadBytes is the largest payload the client enqueues.
	MaxPayloadBytes int `json:"max_payload_bytes"`
}

// settings serves GET api/settings.
func (h *Handler) settings(w http.ResponseWriter, r *http.Request) {
	if !h.readAll(w, r, "settings") {
		return
	}
	topics := h.c.Topics()
	slices.Sort(topics)
	allowed := append([]string{}, h.opts.AllowedTopics...)
	slices.Sort(allowed)
	writeJSON(w, http.StatusOK, settingsResponse{ReadOnly: h.opts.ReadOnly, AllowedTopics: allowed,
		Topics: append([]string{}, topics...), MaxPayloadBytes: h.c.MaxPayloadBytes()})
}
