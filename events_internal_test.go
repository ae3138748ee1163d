package sluice

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver/sqlitedriver"
)

// BenchmarkEmit measures what a client's worker pays to report an event
// (a claim, say) when nobody subscribes, when a subscription wants only
// other kinds (an event stream's logs), and when one wants it.
func BenchmarkEmit(b *testing.B) {
	db, err := sqlitedriver.Open(filepath.Join(b.TempDir(), "jobs.db"))
	require.NoError(b, err)
	b.Cleanup(func() { _ = db.Close() })
	row := &JobRow{ID: "0190f5d2-0000-7000-8000-000000000001", Topic: "t"}
	for _, bc := range []struct {
		name  string
		kinds []EventKind
	}{
		{"NoSubscriber", nil},
		{"OtherKinds", []EventKind{EventLogged}},
		{"Wanted", []EventKind{EventStarted}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c, err := NewClient(sqlitedriver.New(db), &Config{SkipMigrations: true})
			require.NoError(b, err)
			if bc.kinds != nil {
				sub := c.SubscribeBuffered(1, bc.kinds...)
				defer sub.Close()
			}
			for b.Loop() {
				c.events.emit(EventStarted, row, 0)
			}
		})
	}
}

func TestKindBitNamesEveryKindOnce(t *testing.T) {
	t.Parallel()
	seen := uint32(0)
	for _, k := range eventKinds {
		bit := kindBit(k)
		require.NotZero(t, bit, k)
		require.Zero(t, seen&bit, k)
		seen |= bit
	}
	require.Zero(t, kindBit("unknown"))
}
