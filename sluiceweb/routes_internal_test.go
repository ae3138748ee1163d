package sluiceweb

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// TestOpenAPIDocumentsEveryRoute requires the document's operations to be
// exactly the handler's routes.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	t.Parallel()
	db, err := sqlitedriver.Open(filepath.Join(t.TempDir(), "jobs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	c, err := sluice.NewClient(sqlitedriver.New(db), nil)
	require.NoError(t, err)
	h, err := New(c, &Options{Authorize: AllowAll})
	require.NoError(t, err)
	var documented []string
	for path, item := range openAPIDocument()["paths"].(obj) {
		for method := range item.(obj) {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	slices.Sort(documented)
	routes := slices.Clone(h.patterns)
	slices.Sort(routes)
	require.Equal(t, routes, documented)
}
