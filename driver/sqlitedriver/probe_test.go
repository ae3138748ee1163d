package sqlitedriver

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

// TestTxOnHandle checks that statements prepared on the driver's handle are
// used in a caller's transaction on that handle, and not in one of another
// handle on the same file, where they would fail.
func TestTxOnHandle(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "probe.db")
	db, err := Open(path)
	require.NoError(t, err)
	defer db.Close()
	other, err := Open(path)
	require.NoError(t, err)
	defer other.Close()
	d := New(db)
	ctx := t.Context()
	require.NoError(t, d.Migrate(ctx))

	for _, tc := range []struct {
		name string
		db   *sql.DB
		want int32
	}{
		{"same", db, 1},
		{"another", other, -1},
	} {
		tx, err := tc.db.BeginTx(ctx, nil)
		require.NoError(t, err, tc.name)
		ex := d.UnwrapExecutor(tx).(*executor)
		_, err = ex.JobInsertMany(ctx, &driver.JobInsertManyParams{Jobs: []*driver.JobInsert{
			{ID: tc.name, Topic: "t", Queue: "q", Payload: []byte("{}")},
		}})
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, ex.txOnHandle.Load(), tc.name)
		require.NoError(t, tx.Commit(), tc.name)
		_, err = d.Executor().JobGet(ctx, &driver.JobGetParams{ID: tc.name})
		require.NoError(t, err, tc.name)
	}
}
