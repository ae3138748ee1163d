// Package migration loads the versioned SQL migrations a driver embeds.
package migration

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// Migration is one schema version.
type Migration struct {
	// Version orders migrations; it is the number the file name starts with.
	Version int
	// Name is the file's name, e.g. 0001_create_jobs.sql.
	Name string
	// SQL is the file's text, with the driver's placeholders unfilled.
	SQL string
}

// Load returns the migrations in fsys matching pattern, in version order. A
// file is named NNNN_description.sql, NNNN being its version; versions must
// be positive and distinct.
func Load(fsys fs.FS, pattern string) ([]Migration, error) {
	names, err := fs.Glob(fsys, pattern)
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 {
			return nil, fmt.Errorf("migration %s: name does not start with a version", base)
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: base, SQL: string(b)})
	}
	slices.SortFunc(ms, func(a, b Migration) int { return a.Version - b.Version })
	for i := 1; i < len(ms); i++ {
		if ms[i].Version == ms[i-1].Version {
			return nil, fmt.Errorf("migrations %s and %s have the same version", ms[i-1].Name, ms[i].Name)
		}
	}
	return ms, nil
}

// Status returns the state of each migration of ms given when the database
// applied which versions, followed in version order by the versions applied
// that ms does not have (named ""). A version with a zero time counts as
// applied at the Unix epoch, so that it is never mistaken for a pending one.
func Status(ms []Migration, applied map[int]time.Time) []driver.MigrationState {
	out := make([]driver.MigrationState, 0, len(ms))
	known := make(map[int]bool, len(ms))
	for _, m := range ms {
		known[m.Version] = true
		st := driver.MigrationState{Version: m.Version, Name: m.Name}
		if at, ok := applied[m.Version]; ok {
			st.AppliedAt = orEpoch(at)
		}
		out = append(out, st)
	}
	for v, at := range applied {
		if !known[v] {
			out = append(out, driver.MigrationState{Version: v, AppliedAt: orEpoch(at)})
		}
	}
	slices.SortFunc(out, func(a, b driver.MigrationState) int { return a.Version - b.Version })
	return out
}

func orEpoch(t time.Time) time.Time {
	if t.IsZero() {
		return time.Unix(0, 0).UTC()
	}
	return t.UTC()
}
