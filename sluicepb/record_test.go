package sluicepb_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/types"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluicepb"
)

// newOrdersApp returns an app with an orders collection whose creates
// enqueue a charge atomically, and a handler that declines orders of a
// negative amount after they are written, failing the create.
func newOrdersApp(t *testing.T) *pbApp {
	t.Helper()
	p := newApp(t, nil, func(j *sluicepb.Jobs) {
		sluicepb.EnqueueOnCreate(j, "orders", func(e *core.RecordEvent) (sluice.JobArgs, *sluice.EnqueueOptions, error) {
			return ChargeArgs{Order: e.Record.Id, Amount: e.Record.GetInt("amount")}, nil, nil
		})
	})
	p.app.OnRecordCreateExecute("orders").BindFunc(declineNegative)
	orders := core.NewBaseCollection("orders")
	orders.Fields.Add(&core.NumberField{Name: "amount"})
	orders.CreateRule = types.Pointer(`@request.auth.id != ""`)
	require.NoError(t, p.app.Save(orders))
	return p
}

// declineNegative is a record hook that fails the write of an order of a
// negative amount after the write, as an app's own check would.
func declineNegative(e *core.RecordEvent) error {
	if err := e.Next(); err != nil {
		return err
	}
	if e.Record.GetInt("amount") < 0 {
		return errors.New("declined")
	}
	return nil
}

// charges returns the charge jobs, by order.
func (p *pbApp) charges(t *testing.T) map[string]int {
	t.Helper()
	c, err := p.jobs.Client()
	require.NoError(t, err)
	list, err := c.List(t.Context(), &sluice.ListFilter{JobFilter: sluice.JobFilter{Topics: []string{"charge"}}, Limit: 100})
	require.NoError(t, err)
	out := map[string]int{}
	for _, j := range list.Jobs {
		var args ChargeArgs
		require.NoError(t, json.Unmarshal(j.Payload, &args))
		out[args.Order] = args.Amount
	}
	return out
}

// orderIDs returns the IDs of the orders.
func (p *pbApp) orderIDs(t *testing.T) []string {
	t.Helper()
	recs, err := p.app.FindAllRecords("orders")
	require.NoError(t, err)
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.Id)
	}
	return ids
}

// TestEnqueueOnCreate: a record created through the Go API, in a
// transaction or not, and through the HTTP API, gets its job in the same
// transaction; a create that fails after the write, or whose transaction
// rolls back, leaves neither the record nor the job.
func TestEnqueueOnCreate(t *testing.T) {
	t.Parallel()
	p := newOrdersApp(t)
	orders, err := p.app.FindCollectionByNameOrId("orders")
	require.NoError(t, err)
	newOrder := func(amount int) *core.Record {
		r := core.NewRecord(orders)
		r.Set("amount", amount)
		return r
	}

	// app.Save, not in a transaction: one is made.
	ok := newOrder(5)
	require.NoError(t, p.app.Save(ok))
	require.Equal(t, map[string]int{ok.Id: 5}, p.charges(t))
	require.ErrorContains(t, p.app.Save(newOrder(-1)), "declined")
	require.Equal(t, []string{ok.Id}, p.orderIDs(t))
	require.Len(t, p.charges(t), 1)

	// In the caller's transaction: its rollback takes the job too.
	err = p.app.RunInTransaction(func(txApp core.App) error {
		if err := txApp.Save(newOrder(9)); err != nil {
			return err
		}
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)
	require.Len(t, p.orderIDs(t), 1)
	require.Len(t, p.charges(t), 1)
	var inTx *core.Record
	require.NoError(t, p.app.RunInTransaction(func(txApp core.App) error {
		inTx = newOrder(6)
		return txApp.Save(inTx)
	}))
	require.Equal(t, 6, p.charges(t)[inTx.Id])

	// Through PocketBase's record API, as a user.
	p.serve(t)
	user := p.newAuth(t, "users", "buyer@example.com")
	status, body := p.call(t, http.MethodPost, "/api/collections/orders/records", user, map[string]any{"amount": 7})
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Equal(t, 7, p.charges(t)[body["id"].(string)])
	status, _ = p.call(t, http.MethodPost, "/api/collections/orders/records", user, map[string]any{"amount": -3})
	require.Equal(t, http.StatusBadRequest, status)
	require.Len(t, p.orderIDs(t), 3)
	charges := p.charges(t)
	require.Len(t, charges, 3)
	for _, id := range p.orderIDs(t) {
		require.Contains(t, charges, id)
	}
}

// TestEnqueueOnUpdate: an update gets its job in its transaction; an
// update that fails after the write leaves the record as it was and no
// job.
func TestEnqueueOnUpdate(t *testing.T) {
	t.Parallel()
	p := newApp(t, nil, func(j *sluicepb.Jobs) {
		sluicepb.EnqueueOnUpdate(j, "orders", func(e *core.RecordEvent) (sluice.JobArgs, *sluice.EnqueueOptions, error) {
			if e.Record.GetInt("amount") == 0 {
				return nil, nil, nil // nothing to charge: no job
			}
			return ChargeArgs{Order: e.Record.Id, Amount: e.Record.GetInt("amount")}, nil, nil
		})
	})
	p.app.OnRecordUpdateExecute("orders").BindFunc(declineNegative)
	orders := core.NewBaseCollection("orders")
	orders.Fields.Add(&core.NumberField{Name: "amount"})
	require.NoError(t, p.app.Save(orders))
	order := core.NewRecord(orders)
	require.NoError(t, p.app.Save(order)) // a create: not this hook's
	order.Set("amount", 0)
	require.NoError(t, p.app.Save(order))
	require.Empty(t, p.charges(t), "an update whose function returns nil args enqueues nothing")

	order.Set("amount", 8)
	require.NoError(t, p.app.Save(order))
	require.Equal(t, map[string]int{order.Id: 8}, p.charges(t))

	order.Set("amount", -2)
	require.ErrorContains(t, p.app.Save(order), "declined")
	stored, err := p.app.FindRecordById("orders", order.Id)
	require.NoError(t, err)
	require.Equal(t, 8, stored.GetInt("amount"))
	require.Len(t, p.charges(t), 1)
}
