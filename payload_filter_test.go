package sluice_test

import (
	"database/sql"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

func TestPayloadFilter(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testPayloadFilter[*sql.Tx], testPayloadFilter[pgx.Tx])
}

func testPayloadFilter[TTx any](t *testing.T, k *kit[TTx]) {
	ctx := t.Context()
	c := k.client(t, encrypted(nil, key1)) // charge is encrypted
	var ids []string
	for i, p := range []string{`{"customer_id": 42, "plan": {"tier": "pro"}}`, `{"customer_id": 7}`, `{"customer_id": "42"}`} {
		res, err := c.Enqueue(ctx, sluice.RawArgs{TopicName: "invoice", Payload: []byte(p)}, &sluice.EnqueueOptions{Priority: i})
		require.NoError(t, err)
		ids = append(ids, res.Job.ID)
	}
	_, err := c.Enqueue(ctx, secretArgs{N: 42}, nil)
	require.NoError(t, err)

	list := func(f sluice.JobFilter) []string {
		t.Helper()
		page, err := c.List(ctx, &sluice.ListFilter{JobFilter: f})
		require.NoError(t, err)
		out := []string{}
		for _, j := range page.Jobs {
			out = append(out, j.ID)
		}
		return out
	}
	require.Equal(t, []string{ids[0]}, list(sluice.JobFilter{Payload: map[string]any{"customer_id": 42}}))
	require.Equal(t, []string{ids[2]}, list(sluice.JobFilter{Payload: map[string]any{"customer_id": "42"}}))
	require.Equal(t, []string{ids[0]}, list(sluice.JobFilter{Topics: []string{"invoice"},
		Payload: map[string]any{"plan.tier": "pro", "customer_id": 42.0}}))
	require.Empty(t, list(sluice.JobFilter{Payload: map[string]any{"customer_id": "a\x00"}}), "text that breaks the rule matches nothing")

	cancelled, err := c.CancelMany(ctx, &sluice.JobFilter{Payload: map[string]any{"customer_id": 7}})
	require.NoError(t, err)
	require.Len(t, cancelled, 1)
	require.Equal(t, ids[1], cancelled[0].ID)

	for field, f := range map[string]sluice.JobFilter{
		`Payload["customer..id"]`:      {Payload: map[string]any{"customer..id": 1}},
		`Payload[""]`:                  {Payload: map[string]any{"": 1}},
		`Payload["a b"]`:               {Payload: map[string]any{"a b": 1}},
		`Payload["plan"]`:              {Payload: map[string]any{"plan": map[string]any{"tier": "pro"}}},
		`Payload["ids"]`:               {Payload: map[string]any{"ids": []int{1}}},
		`Payload["a.b.c.d.e.f.g.h.i"]`: {Payload: map[string]any{"a.b.c.d.e.f.g.h.i": 1}},
		"Topics[1]":                    {Topics: []string{"invoice", "charge"}, Payload: map[string]any{"n": 42}},
	} {
		_, err := c.List(ctx, &sluice.ListFilter{JobFilter: f})
		var fe *sluice.FilterError
		require.ErrorAs(t, err, &fe, field)
		require.ErrorIs(t, err, sluice.ErrInvalidFilter)
		require.Equal(t, field, fe.Field)
		_, err = c.CancelMany(ctx, &f)
		require.ErrorIs(t, err, sluice.ErrInvalidFilter, "nothing is cancelled: %s", field)
	}
	many := map[string]any{}
	for i := range sluice.MaxPayloadConditions + 1 {
		many[fmt.Sprintf("k%d", i)] = i
	}
	_, err = c.List(ctx, &sluice.ListFilter{JobFilter: sluice.JobFilter{Payload: many}})
	require.ErrorIs(t, err, sluice.ErrInvalidFilter)
	st, err := c.Stats(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, 1, st.ByStatus[sluice.StatusCancelled], "only the one job matched")
}
