package rowcodec_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
