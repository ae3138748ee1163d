package rowcodec_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/rowcodec"
)

func TestErrors(t *testing.T) {
	t.Parallel()
	errs, err := rowcodec.Errors([]byte(`[{"attempt":1,"at":"2026-01-08T13:00:00+01:00","error":"x"}]`))
	require.NoError(t, err)
	require.Len(t, errs, 1)
	require.Equal(t, time.UTC, errs[0].At.Location())
	require.True(t, errs[0].At.Equal(time.Date(2026, 1, 8, 12, 0, 0, 0, time.UTC)))
	none, err := rowcodec.Errors(nil)
	require.NoError(t, err)
	require.Nil(t, none)
	_, err = rowcodec.Errors([]byte(`{`))
	require.Error(t, err)
}

func TestStoredAndSplitInsert(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 8, 13, 0, 0, 123456789, time.FixedZone("CET", 3600))
	require.Equal(t, time.Date(2026, 1, 8, 12, 0, 0, 123456000, time.UTC), rowcodec.Stored(at))
	require.True(t, rowcodec.Stored(time.Time{}).IsZero())

	jobs := []*driver.JobInsert{
		{ID: "a", Topic: "t", Queue: "q", Payload: []byte(`{}`), RunAt: at, CreatedAt: at},
		{ID: "b", Topic: "t", Queue: "q", UniqueKey: "k"},
	}
	results, plain, unique, err := rowcodec.SplitInsert(jobs)
	require.NoError(t, err)
	require.Equal(t, []*driver.JobInsert{jobs[0]}, plain)
	require.Equal(t, []int{1}, unique)
	require.Len(t, results, 2)
	require.Equal(t, driver.StatusPending, results[0].Job.Status)
	require.Equal(t, rowcodec.Stored(at), results[0].Job.RunAt)
	require.Nil(t, results[1].Job, "a unique job's row comes from its insert")
	_, _, _, err = rowcodec.SplitInsert([]*driver.JobInsert{nil})
	require.Error(t, err)
}
