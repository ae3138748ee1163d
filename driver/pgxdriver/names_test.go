package pgxdriver_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver/pgxdriver"
)

func TestNames(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("s", 63)
	longTable := strings.Repeat("t", 48)
	for _, tc := range []struct {
		opts           []pgxdriver.Option
		table, channel string
	}{
		{nil, `"sluice_jobs"`, "sluice_jobs"},
		{[]pgxdriver.Option{pgxdriver.WithTable("Jobs")}, `"Jobs"`, "Jobs"},
		{[]pgxdriver.Option{pgxdriver.WithSchema("app")}, `"app"."sluice_jobs"`, "app.sluice_jobs"},
		{[]pgxdriver.Option{pgxdriver.WithSchema(long), pgxdriver.WithTable(longTable)},
			`"` + long + `"."` + longTable + `"`, ""},
	} {
		d := pgxdriver.New(nil, tc.opts...)
		require.Equal(t, tc.table, d.Table())
		ch := d.Channel()
		require.LessOrEqual(t, len(ch), 63, "channel %q", ch)
		if tc.channel != "" {
			require.Equal(t, tc.channel, ch)
		}
	}
	// Long names that differ only at their end get different channels.
	a := pgxdriver.New(nil, pgxdriver.WithSchema(long), pgxdriver.WithTable(longTable)).Channel()
	b := pgxdriver.New(nil, pgxdriver.WithSchema(long), pgxdriver.WithTable(longTable[1:]+"u")).Channel()
	require.NotEqual(t, a, b)
}
