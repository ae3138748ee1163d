package migration_test

import (
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver/internal/migration"
)

// FuzzLoad loads migrations from arbitrary file names: a name that does not
// start with a positive version, or two names with one version, is an
// error; otherwise every file comes back once, in version order, with its
// text.
func FuzzLoad(f *testing.F) {
	f.Add("0001_a.sql", "0002_b.sql")
	f.Add("0001_a.sql", "1_b.sql")
	f.Add("0000_a.sql", "0002_b.sql")
	f.Add("x_a.sql", "0002_b.sql")
	f.Add("-1_a.sql", "+2_b.sql")
	f.Add("99999999999999999999_a.sql", "3_.sql")
	f.Fuzz(func(t *testing.T, a, b string) {
		if a == b || !fstestName(a) || !fstestName(b) {
			return
		}
		fsys := fstest.MapFS{"m/" + a: {Data: []byte("A")}, "m/" + b: {Data: []byte("B")}}
		ms, err := migration.Load(fsys, "m/*.sql")
		va, oka := version(a)
		vb, okb := version(b)
		if !oka || !okb || va == vb {
			require.Error(t, err)
			return
		}
		require.NoError(t, err)
		require.Len(t, ms, 2)
		require.Less(t, ms[0].Version, ms[1].Version)
		for _, m := range ms {
			want := map[string]string{a: "A", b: "B"}[m.Name]
			require.Equal(t, want, m.SQL)
		}
	})
}

// fstestName reports whether name is one file matching *.sql.
func fstestName(name string) bool {
	return strings.HasSuffix(name, ".sql") && !strings.ContainsAny(name, "/\\*?[") &&
		!strings.HasPrefix(name, ".") && strings.ToValidUTF8(name, "") == name
}

// version is the rule Load documents: NNNN_description.sql, NNNN >= 1.
func version(name string) (int, bool) {
	num, _, ok := strings.Cut(name, "_")
	v, err := strconv.Atoi(num)
	return v, ok && err == nil && v >= 1
}
