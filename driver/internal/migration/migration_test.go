package migration_test

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver/internal/migration"
)

func TestLoad(t *testing.T) {
	t.Parallel()
	ms, err := migration.Load(fstest.MapFS{
		"m/0002_b.sql": {Data: []byte("B")},
		"m/0001_a.sql": {Data: []byte("A")},
	}, "m/*.sql")
	require.NoError(t, err)
	require.Equal(t, []migration.Migration{{1, "0001_a.sql", "A"}, {2, "0002_b.sql", "B"}}, ms)

	for name, fsys := range map[string]fstest.MapFS{
		"no version":   {"m/x_a.sql": {}},
		"zero version": {"m/0000_a.sql": {}},
		"same version": {"m/0001_a.sql": {}, "m/1_b.sql": {}},
	} {
		_, err := migration.Load(fsys, "m/*.sql")
		require.Error(t, err, name)
	}
}
