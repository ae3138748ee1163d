package drivertest

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func presenceCases[TTx any]() []testCase[TTx] {
	return []testCase[TTx]{
		// A client records itself, refreshes its record keeping StartedAt,
		// and forgets it; records are listed by ID, seen since a time.
		// Worker counts round-trip, and a record without them (as older
		// clients write) has none.
		{name: "Record", twin: true, fn: testPresenceRecord[TTx]},
		// Recording prunes the records of clients gone since PruneBefore,
		// never the recording client's own.
		{name: "Prune", twin: true, fn: testPresencePrune[TTx]},
	}
}

// clientRow returns the record of client id started at base and seen at
// seen.
func (h *harness[TTx]) clientRow(id string, seen time.Time) driver.ClientRow {
	return driver.ClientRow{
		ID: id, Host: "host-" + id, PID: 4242, Topics: []string{"a", "b"}, Queues: []string{"default"},
		MaxWorkers: map[string]int{"default": 4}, StartedAt: h.base, SeenAt: seen,
	}
}

// recordVia records p through ex as mode m says.
func (h *harness[TTx]) recordVia(m mode, p *driver.ClientRecordParams) {
	h.t.Helper()
	h.via(m, func(ex driver.Executor) {
		require.NoError(h.t, ex.ClientRecord(h.ctx, p), "ClientRecord")
	})
}

// clients lists the records seen since since.
func (h *harness[TTx]) clients(since time.Time) []*driver.ClientRow {
	h.t.Helper()
	rows, err := h.exec().ClientList(h.ctx, &driver.ClientListParams{SeenSince: since})
	require.NoError(h.t, err, "ClientList")
	require.NotNil(h.t, rows, "ClientList")
	return rows
}

// requireClients requires got to be want, field by field.
func (h *harness[TTx]) requireClients(want []driver.ClientRow, got []*driver.ClientRow) {
	h.t.Helper()
	require.Len(h.t, got, len(want), "clients")
	for i := range want {
		w, g := want[i], got[i]
		require.Equal(h.t, w.ID, g.ID)
		require.Equal(h.t, w.Host, g.Host)
		require.Equal(h.t, w.PID, g.PID)
		require.Equal(h.t, w.Topics, g.Topics)
		require.Equal(h.t, w.Queues, g.Queues)
		require.Equal(h.t, w.MaxWorkers, g.MaxWorkers)
		requireTime(h.t, w.StartedAt, g.StartedAt, w.ID+": StartedAt")
		requireTime(h.t, w.SeenAt, g.SeenAt, w.ID+": SeenAt")
	}
}

func testPresenceRecord[TTx any](h *harness[TTx], m mode) {
	a, b := h.clientRow(client2, h.base), h.clientRow(client1, h.base)
	b.Topics, b.Queues, b.MaxWorkers = nil, []string{}, nil
	h.recordVia(m, &driver.ClientRecordParams{Client: a})
	h.recordVia(m, &driver.ClientRecordParams{Client: b})
	b.Topics = []string{} // nil is stored as none
	h.requireClients([]driver.ClientRow{b, a}, h.clients(time.Time{}))

	// A refresh keeps StartedAt and replaces the rest.
	again := h.clientRow(client2, h.at(time.Minute))
	again.StartedAt = h.at(time.Minute)
	again.Topics = []string{"c"}
	again.Queues, again.MaxWorkers = []string{"default", "mail"}, map[string]int{"default": 1, "mail": 20}
	h.recordVia(m, &driver.ClientRecordParams{Client: again})
	again.StartedAt = h.base
	h.requireClients([]driver.ClientRow{again}, h.clients(h.at(time.Second)))

	h.via(m, func(ex driver.Executor) {
		require.NoError(h.t, ex.ClientForget(h.ctx, &driver.ClientForgetParams{ID: client2}))
	})
	h.requireClients([]driver.ClientRow{b}, h.clients(time.Time{}))
}

func testPresencePrune[TTx any](h *harness[TTx], m mode) {
	old, fresh := h.clientRow(client1, h.base), h.clientRow(client2, h.at(time.Hour))
	h.recordVia(m, &driver.ClientRecordParams{Client: old})
	h.recordVia(m, &driver.ClientRecordParams{Client: fresh})
	// The recording client is never pruned, however old its record.
	self := h.clientRow("self", h.base)
	h.recordVia(m, &driver.ClientRecordParams{Client: self, PruneBefore: h.at(time.Minute)})
	h.requireClients([]driver.ClientRow{fresh, self}, h.clients(time.Time{}))
}
