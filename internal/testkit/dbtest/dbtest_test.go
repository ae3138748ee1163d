package dbtest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/dbtest"
)

func TestPoolUsesItsOwnSchema(t *testing.T) {
	t.Parallel()
	pool, schema := dbtest.Pool(t)
	var got string
	require.NoError(t, pool.QueryRow(t.Context(), "SELECT current_schema()").Scan(&got))
	require.Equal(t, schema, got)
	_, err := pool.Exec(t.Context(), "CREATE TABLE t (id int)")
	require.NoError(t, err)
}
