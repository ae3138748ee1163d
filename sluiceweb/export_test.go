package sluiceweb

// OpenStreams returns how many event streams h serves or is opening,
// for tests that wait for the last to go.
func OpenStreams(h *Handler) int {
	h.streams.mu.Lock()
	defer h.streams.mu.Unlock()
	return h.streams.open
}

// StreamResets returns how many reset events h's event streams have sent
// to readers that fell behind or resumed too late.
func StreamResets(h *Handler) uint64 { return h.streams.hub.Resets() }
