//go:build faultbugs

package faults_test

// Reproductions of known faults outside this package, kept out of the
// ordinary run until they are fixed. Run them with:
//
//	go test -tags faultbugs -run Bug ./internal/faults

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBugSQLiteWithTableKeyword: WithTable accepts any plain identifier,
// including SQL keywords such as "select", but the driver writes the name
// into its SQL unquoted, so Migrate fails with a syntax error.
func TestBugSQLiteWithTableKeyword(t *testing.T) {
	for _, name := range []string{"select", "order", "group", "table"} {
		d, db := memoryDriver(t, name)
		require.NoError(t, d.Migrate(t.Context()), "table %q", name)
		require.Contains(t, sqliteTables(t, db), name)
	}
}
