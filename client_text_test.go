package sluice_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

func TestLookupsByBadTextFindNothing(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testLookupsByBadTextFindNothing[*sql.Tx], testLookupsByBadTextFindNothing[pgx.Tx])
}

// A caller's text that breaks the text rule (as a URL or a command line
// may hold) names nothing: each lookup by it answers its not-found error,
// each filter by it selects no job, on both drivers, and a transaction
// that made such a lookup can still commit.
func testLookupsByBadTextFindNothing[TTx any](t *testing.T, k *kit[TTx]) {
	ctx := t.Context()
	c, err := sluice.NewClient(k.driver, &sluice.Config{Logger: quiet,
		Workers: workers(func(context.Context, *sluice.Job[noteArgs]) error { return nil })})
	require.NoError(t, err)
	res, err := c.Enqueue(ctx, noteArgs{N: 1}, &sluice.EnqueueOptions{UniqueKey: "k", Tags: []string{"t"},
		Metadata: map[string]any{"m": "v"}})
	require.NoError(t, err)
	_, err = c.CreateSchedule(ctx, digest())
	require.NoError(t, err)

	for _, bad := range []string{"a\x00b", "q\xff"} {
		_, err := c.Get(ctx, bad)
		require.ErrorIs(t, err, sluice.ErrNotFound, "Get %q", bad)
		_, err = c.Explain(ctx, bad)
		require.ErrorIs(t, err, sluice.ErrNotFound, "Explain %q", bad)
		for name, act := range map[string]func(context.Context, string) (*sluice.JobRow, error){
			"Cancel": c.Cancel, "Requeue": c.Requeue, "Delete": c.Delete, "RetryNow": c.RetryNow,
		} {
			_, err = act(ctx, bad)
			require.ErrorIs(t, err, sluice.ErrNotFound, "%s %q", name, bad)
		}
		_, err = c.GetSchedule(ctx, bad)
		require.ErrorIs(t, err, sluice.ErrScheduleNotFound, "GetSchedule %q", bad)
		_, err = c.DeleteSchedule(ctx, bad)
		require.ErrorIs(t, err, sluice.ErrScheduleNotFound, "DeleteSchedule %q", bad)
		job, err := c.WorkNext(ctx, bad)
		require.NoError(t, err, "WorkNext %q", bad)
		require.Nil(t, job, "WorkNext %q", bad)

		tx := k.tx(t)
		_, err = c.GetTx(ctx, tx, bad)
		require.ErrorIs(t, err, sluice.ErrNotFound, "GetTx %q", bad)
		_, err = c.CancelTx(ctx, tx, bad)
		require.ErrorIs(t, err, sluice.ErrNotFound, "CancelTx %q", bad)
		_, err = c.DeleteScheduleTx(ctx, tx, bad)
		require.ErrorIs(t, err, sluice.ErrScheduleNotFound, "DeleteScheduleTx %q", bad)
		page, err := c.ListTx(ctx, tx, &sluice.ListFilter{JobFilter: sluice.JobFilter{Topics: []string{bad}}})
		require.NoError(t, err, "ListTx of topic %q", bad)
		require.Empty(t, page.Jobs, "ListTx of topic %q", bad)
		k.end(t, tx, true)

		for name, f := range map[string]sluice.JobFilter{
			"Topics":        {Topics: []string{bad}},
			"Queues":        {Queues: []string{bad}},
			"UniqueKey":     {UniqueKey: bad},
			"Tags":          {Tags: []string{"t", bad}},
			"AnyTag":        {Tags: []string{bad}, AnyTag: true},
			"MetadataKey":   {Metadata: map[string]string{bad: "v"}},
			"MetadataValue": {Metadata: map[string]string{"m": bad}},
		} {
			page, err := c.List(ctx, &sluice.ListFilter{JobFilter: f})
			require.NoError(t, err, "List by %s %q", name, bad)
			require.Empty(t, page.Jobs, "List by %s %q", name, bad)
			require.Zero(t, page.Total, "List by %s %q", name, bad)
			cancelled, err := c.CancelMany(ctx, &f)
			require.NoError(t, err, "CancelMany by %s %q", name, bad)
			require.Empty(t, cancelled, "CancelMany by %s %q", name, bad)
		}
		page, err = c.List(ctx, &sluice.ListFilter{JobFilter: sluice.JobFilter{Topics: []string{bad, "note"}}})
		require.NoError(t, err, "List of topics %q and note", bad)
		require.Len(t, page.Jobs, 1, "List of topics %q and note", bad)
		st, err := c.Stats(ctx, &sluice.StatsFilter{Topics: []string{bad}, Queues: []string{bad}})
		require.NoError(t, err, "Stats of %q", bad)
		require.Zero(t, st.Total, "Stats of %q", bad)
	}
	got, err := c.Get(ctx, res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, sluice.StatusPending, got.Status)
	_, err = c.GetSchedule(ctx, digest().Name)
	require.NoError(t, err)
}
