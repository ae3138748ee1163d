package drivertest

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func testListPayload[TTx any](h *harness[TTx], m mode) {
	topic := "payload_" + newID()[:8]
	payloads := []string{
		`{"customer_id": 42, "name": "ada", "vip": true, "note": null, "nested": {"id": "7"}}`,
		`{"customer_id": 42.0, "name": "bob", "vip": false}`,
		`{"customer_id": "42"}`,
		`{"customer_id": [42], "name": "a.b"}`,
		`{}`,
		`{"nested": {"id": 7}, "a.b": 1}`,
	}
	stored := make([]string, len(payloads))
	for i, p := range payloads {
		j := h.newJob()
		j.Topic, j.Payload = topic, []byte(p)
		stored[i] = h.insert(j)[0].ID
	}
	match := func(value string, path ...string) driver.PayloadMatch {
		return driver.PayloadMatch{Path: path, Value: json.RawMessage(value)}
	}
	for _, tc := range []struct {
		conds []driver.PayloadMatch
		want  []int
	}{
		{[]driver.PayloadMatch{match(`42`, "customer_id")}, []int{0, 1}},
		{[]driver.PayloadMatch{match(`42.00`, "customer_id")}, []int{0, 1}},
		{[]driver.PayloadMatch{match(`"42"`, "customer_id")}, []int{2}},
		{[]driver.PayloadMatch{match(`"ada"`, "name")}, []int{0}},
		{[]driver.PayloadMatch{match(`true`, "vip")}, []int{0}},
		{[]driver.PayloadMatch{match(`false`, "vip")}, []int{1}},
		{[]driver.PayloadMatch{match(`null`, "note")}, []int{0}},
		{[]driver.PayloadMatch{match(`"7"`, "nested", "id")}, []int{0}},
		{[]driver.PayloadMatch{match(`7`, "nested", "id")}, []int{5}},
		{[]driver.PayloadMatch{match(`1`, "a.b")}, []int{5}}, // a key holding a dot
		{[]driver.PayloadMatch{match(`42`, "customer_id"), match(`"bob"`, "name")}, []int{1}},
		{[]driver.PayloadMatch{match(`1`, "missing")}, nil},
		{[]driver.PayloadMatch{match(`"a\u0000"`, "name")}, nil}, // breaks the text rule
		{[]driver.PayloadMatch{match("\"\xff\"", "name")}, nil},  // invalid UTF-8
		{[]driver.PayloadMatch{match(`"ada"`, "na\x00me")}, nil}, // so does the path
	} {
		f := driver.JobFilter{Topics: []string{topic}, Payload: tc.conds}
		want := []string{}
		for _, i := range tc.want {
			want = append(want, stored[i])
		}
		slices.Sort(want)
		msg := fmt.Sprintf("%+v", tc.conds)
		var res *driver.JobListResult
		var st *driver.JobStats
		h.via(m, func(ex driver.Executor) {
			res = h.listVia(ex, &driver.JobListParams{Filter: f, Limit: 100})
			st = h.statsVia(ex, &driver.JobStatsParams{Filter: f, Since: h.base})
		})
		require.Equal(h.t, want, ids(res.Jobs), msg)
		require.Equal(h.t, len(want), res.Total, msg)
		n := 0
		for _, c := range st.Counts {
			n += c.Count
		}
		require.Equal(h.t, len(want), n, msg+": stats")
	}
	// An action by filter selects the same jobs.
	var rows []*driver.JobRow
	h.via(m, func(ex driver.Executor) {
		var err error
		rows, err = ex.JobCancel(h.ctx, &driver.JobActParams{Now: h.at(time.Minute),
			Filter: driver.JobFilter{Topics: []string{topic}, Payload: []driver.PayloadMatch{match(`42`, "customer_id")}}})
		require.NoError(h.t, err)
	})
	require.Equal(h.t, sorted([]string{stored[0], stored[1]}), sorted(ids(rows)))
}

// sorted returns ids sorted.
func sorted(ids []string) []string {
	slices.Sort(ids)
	return ids
}
