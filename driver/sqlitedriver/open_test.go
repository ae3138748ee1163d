package sqlitedriver_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

func TestOpenSetsPragmas(t *testing.T) {
	t.Parallel()
	db, _ := openDB(t, 0)
	ctx := t.Context()

	// Pragmas are per connection: check two connections held at once.
	var conns []*sql.Conn
	for range 2 {
		c, err := db.Conn(ctx)
		require.NoError(t, err)
		defer c.Close()
		conns = append(conns, c)
	}
	for _, c := range conns {
		for pragma, want := range map[string]string{
			"journal_mode": "wal",
			"synchronous":  "1", // NORMAL
			"busy_timeout": strconv.Itoa(sqlitedriver.BusyTimeout),
			"foreign_keys": "1",
		} {
			var got string
			require.NoError(t, c.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got), pragma)
			require.Equal(t, want, got, pragma)
		}
	}
}

// TestOpenBeginsImmediate shows that a transaction of Open's handle holds
// the write lock from its start: another connection that will not wait
// cannot begin writing.
func TestOpenBeginsImmediate(t *testing.T) {
	t.Parallel()
	db, path := openDB(t, 0)
	ctx := t.Context()

	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, tx.Rollback()) }()

	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	require.NoError(t, err)
	defer other.Close()
	_, err = other.ExecContext(ctx, "BEGIN IMMEDIATE")
	var serr *sqlite.Error
	require.True(t, errors.As(err, &serr), "got %v", err)
	require.Equal(t, sqlite3.SQLITE_BUSY, serr.Code()&0xff)
}

func TestDSNEscapesPath(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "odd?name#with%chars.db")
	db, err := sqlitedriver.Open(path)
	require.NoError(t, err)
	defer db.Close()
	d := sqlitedriver.New(db)
	require.NoError(t, d.Migrate(context.Background()))
	require.FileExists(t, path)
}

func TestOpenFails(t *testing.T) {
	t.Parallel()
	_, err := sqlitedriver.Open(filepath.Join(t.TempDir(), "missing-dir", "x.db"))
	require.Error(t, err)
}
