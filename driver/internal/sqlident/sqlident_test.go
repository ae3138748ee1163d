package sqlident_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver/internal/sqlident"
)

func TestIsPlain(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"sluice_jobs": true, "_x": true, "Jobs2": true, "order": true,
		"": false, "2jobs": false, "jobs-2": false, "a.b": false, `a"b`: false, "jöbs": false,
		"jobs\n": false, " jobs": false,
	} {
		require.Equal(t, want, sqlident.IsPlain(name), "%q", name)
	}
}
