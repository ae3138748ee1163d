package sluice_test

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

func TestListPagesByCursorAndOffset(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testListPagesByCursorAndOffset[*sql.Tx], testListPagesByCursorAndOffset[pgx.Tx])
}

func testListPagesByCursorAndOffset[TTx any](t *testing.T, k *kit[TTx]) {
	c := k.client(t, nil)
	var ids []string
	for i := range 25 {
		var args sluice.JobArgs = noteArgs{N: i}
		if i%5 == 0 {
			args = otherArgs{}
		}
		res, err := c.Enqueue(t.Context(), args, nil)
		require.NoError(t, err)
		if i%5 != 0 {
			ids = append(ids, res.Job.ID)
		}
	}
	for _, order := range []sluice.ListOrder{sluice.OldestFirst, sluice.NewestFirst} {
		want := slices.Clone(ids)
		if order == sluice.NewestFirst {
			slices.Reverse(want)
		}
		f := &sluice.ListFilter{JobFilter: sluice.JobFilter{Topics: []string{"note"}}, Order: order, Limit: 7}
		var got []string
		for range 10 {
			page, err := c.List(t.Context(), f)
			require.NoError(t, err)
			require.Equal(t, len(ids), page.Total)
			for _, j := range page.Jobs {
				got = append(got, j.ID)
			}
			if page.NextCursor == "" {
				break
			}
			f.Cursor = page.NextCursor
		}
		require.Equal(t, want, got, "cursor pages, order %d", order)

		page, err := c.List(t.Context(), &sluice.ListFilter{JobFilter: sluice.JobFilter{Topics: []string{"note"}}, Order: order, Offset: 14, Limit: 100})
		require.NoError(t, err)
		require.Equal(t, want[14:], idsOf(page.Jobs), "offset page, order %d", order)
		require.Empty(t, page.NextCursor, "the last page has no next cursor")
	}

	// The default limit, and an empty selection's page.
	page, err := c.List(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, page.Jobs, 25)
	page, err = c.List(t.Context(), &sluice.ListFilter{JobFilter: sluice.JobFilter{Statuses: []sluice.JobStatus{sluice.StatusFailed}}})
	require.NoError(t, err)
	require.Equal(t, 0, page.Total)
	require.NotNil(t, page.Jobs)
	require.Empty(t, page.Jobs)
}

func idsOf(rows []*sluice.JobRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out
}

func TestListTxSeesItsOwnJobs(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testListTxSeesItsOwnJobs[*sql.Tx], testListTxSeesItsOwnJobs[pgx.Tx])
}

func testListTxSeesItsOwnJobs[TTx any](t *testing.T, k *kit[TTx]) {
	c := k.client(t, nil)
	tx := k.tx(t)
	res, err := c.EnqueueTx(t.Context(), tx, noteArgs{}, nil)
	require.NoError(t, err)
	page, err := c.ListTx(t.Context(), tx, nil)
	require.NoError(t, err)
	require.Equal(t, []string{res.Job.ID}, idsOf(page.Jobs))
	st, err := c.StatsTx(t.Context(), tx, nil)
	require.NoError(t, err)
	require.Equal(t, 1, st.ByStatus[sluice.StatusPending])
	k.end(t, tx, false)

	var nilTx TTx
	_, err = c.ListTx(t.Context(), nilTx, nil)
	require.ErrorIs(t, err, sluice.ErrNilTx)
	_, err = c.StatsTx(t.Context(), nilTx, nil)
	require.ErrorIs(t, err, sluice.ErrNilTx)
}

func TestListAndStatsRejectBadFilters(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testListAndStatsRejectBadFilters[*sql.Tx], testListAndStatsRejectBadFilters[pgx.Tx])
}

func testListAndStatsRejectBadFilters[TTx any](t *testing.T, k *kit[TTx]) {
	c := k.client(t, nil)
	_, err := c.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	page, err := c.List(t.Context(), &sluice.ListFilter{Limit: 1, Order: sluice.NewestFirst})
	require.NoError(t, err)
	require.Empty(t, page.NextCursor)
	_, err = c.Enqueue(t.Context(), noteArgs{}, nil)
	require.NoError(t, err)
	page, err = c.List(t.Context(), &sluice.ListFilter{Limit: 1, Order: sluice.NewestFirst})
	require.NoError(t, err)
	newest := page.NextCursor
	require.NotEmpty(t, newest)

	tests := []struct {
		name  string
		f     *sluice.ListFilter
		field string
	}{
		{"negative limit", &sluice.ListFilter{Limit: -1}, "Limit"},
		{"limit over the most", &sluice.ListFilter{Limit: sluice.MaxListLimit + 1}, "Limit"},
		{"negative offset", &sluice.ListFilter{Offset: -1}, "Offset"},
		{"unknown status", &sluice.ListFilter{JobFilter: sluice.JobFilter{Statuses: []sluice.JobStatus{"pending", "done"}}}, "Statuses[1]"},
		{"empty topic", &sluice.ListFilter{JobFilter: sluice.JobFilter{Topics: []string{""}}}, "Topics[0]"},
		{"empty queue", &sluice.ListFilter{JobFilter: sluice.JobFilter{Queues: []string{"default", ""}}}, "Queues[1]"},
		{"unknown order", &sluice.ListFilter{Order: 7}, "Order"},
		{"garbage cursor", &sluice.ListFilter{Cursor: "!!"}, "Cursor"},
		{"cursor of the other order", &sluice.ListFilter{Cursor: newest}, "Cursor"},
		{"cursor and offset", &sluice.ListFilter{Cursor: newest, Order: sluice.NewestFirst, Offset: 1}, "Cursor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := c.List(t.Context(), tt.f)
			require.ErrorIs(t, err, sluice.ErrInvalidFilter)
			require.Nil(t, res)
			var fe *sluice.FilterError
			require.True(t, errors.As(err, &fe))
			require.Equal(t, tt.field, fe.Field)
		})
	}
	for name, f := range map[string]*sluice.StatsFilter{
		"negative window": {Window: -time.Second},
		"empty topic":     {Topics: []string{""}},
	} {
		_, err := c.Stats(t.Context(), f)
		require.ErrorIs(t, err, sluice.ErrInvalidFilter, name)
	}
	require.Equal(t, 2, k.count(t), "nothing was written")
}

func TestStatsSumsUpOutcomes(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, testStatsSumsUpOutcomes[*sql.Tx], testStatsSumsUpOutcomes[pgx.Tx])
}

func testStatsSumsUpOutcomes[TTx any](t *testing.T, k *kit[TTx]) {
	clock := &fakeClock{}
	c := k.client(t, &sluice.Config{
		Clock: clock.Now,
		Workers: workers(func(ctx context.Context, job *sluice.Job[noteArgs]) error {
			if job.Args.N < 0 {
				return errors.New("negative")
			}
			return nil
		}),
	})
	var ids []string
	for _, n := range []int{1, 2, 3, -1} {
		res, err := c.Enqueue(t.Context(), noteArgs{N: n}, &sluice.EnqueueOptions{MaxRetries: sluice.NoRetries})
		require.NoError(t, err)
		ids = append(ids, res.Job.ID)
	}
	_, err := c.Enqueue(t.Context(), otherArgs{}, &sluice.EnqueueOptions{RunAt: clock.Now().Add(time.Hour)})
	require.NoError(t, err)
	var durs []time.Duration
	for i, id := range ids {
		if i == 3 {
			waitFor(t, c, id, sluice.StatusFailed)
			continue
		}
		row := waitFor(t, c, id, sluice.StatusCompleted)
		durs = append(durs, row.FinalizedAt.Sub(row.AttemptedAt))
	}
	slices.Sort(durs)

	st, err := c.Stats(t.Context(), nil)
	require.NoError(t, err)
	require.Equal(t, 5, st.Total)
	require.Equal(t, map[sluice.JobStatus]int{"completed": 3, "failed": 1, "pending": 1}, st.ByStatus)
	require.Equal(t, map[string]map[sluice.JobStatus]int{
		"note":  {"completed": 3, "failed": 1},
		"other": {"pending": 1},
	}, st.ByTopic)
	require.Equal(t, map[string]map[sluice.JobStatus]int{
		"default": {"completed": 3, "failed": 1, "pending": 1},
	}, st.ByQueue)
	require.Equal(t, sluice.DefaultStatsWindow, st.Window)
	require.Equal(t, 3, st.Completed)
	require.Equal(t, 1, st.Failed)
	require.NotNil(t, st.SuccessRate)
	require.InDelta(t, 0.75, *st.SuccessRate, 1e-9)
	require.Equal(t, time.Duration(math.Round(float64(durs[0]+durs[1]+durs[2])/3)), st.AvgDuration)
	require.Equal(t, durs[2], st.P95Duration)

	st, err = c.Stats(t.Context(), &sluice.StatsFilter{Topics: []string{"other"}})
	require.NoError(t, err)
	require.Equal(t, 1, st.Total)
	require.Equal(t, 0, st.Completed)

	// Outside the window, the outcomes no longer count; the jobs still do.
	clock.Advance(2 * time.Hour)
	st, err = c.Stats(t.Context(), &sluice.StatsFilter{Window: time.Hour})
	require.NoError(t, err)
	require.Equal(t, 5, st.Total)
	require.Equal(t, 0, st.Completed+st.Failed)
	require.Nil(t, st.SuccessRate, "no outcomes, no rate")
	require.Zero(t, st.AvgDuration)
}
